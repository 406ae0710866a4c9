"""A process-wide cache of bounded size that forgets its oldest entries one at a time (P1).

The gateway's caches (compiled validators, server secrets, catalog lookups) are keyed per tool or
server of every tenant a worker serves. Emptied whole when full, a platform with more tools than
the bound rebuilt every entry again and again; dropping the oldest keeps the rest warm."""


class BoundedDict(dict):
    """A dict of at most `limit` entries: setting one more drops the oldest set (insertion order).
    Safe to share between threads as a cache: a lost race drops one entry too many or too few."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        while len(self) > self.limit:
            try:
                del self[next(iter(self))]
            except (KeyError, RuntimeError, StopIteration):  # another thread changed it meanwhile
                break
