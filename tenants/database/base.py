"""The database backend: django-tenants' (each query runs in the current tenant's schema), which
also remembers the search_path a pooled connection already has (P4).

django-tenants forgets the search_path whenever Django gives a connection back to the pool, so
every checkout sent `SET search_path` again: a turn takes a connection back after each wait (the
model, a tool), and so paid a statement (and a round trip) per step for a schema it was already in.
Here the value a SET left on the physical connection is kept beside it, and a checkout for the same
schemas sends nothing. Only a SET that took effect for the session is kept: one sent in autocommit,
outside a transaction. A SET sent inside a transaction forgets it (a rollback would undo the SET),
so the next cursor sends it again, as django-tenants always did.
"""

from weakref import WeakKeyDictionary

from django_tenants.postgresql_backend import base
from psycopg.pq import TransactionStatus

# The search_path each physical (psycopg) connection has for its session, as its last SET left it.
_session_paths: "WeakKeyDictionary[object, tuple[str, ...]]" = WeakKeyDictionary()


class DatabaseWrapper(base.DatabaseWrapper):
    def _handle_search_path(self, cursor=None):
        raw = self.connection
        if (self.search_path_set_schemas is None and not self._setting_search_path and raw is not None
                and _session_paths.get(raw) == tuple(self._get_cursor_search_paths())):
            self.search_path_set_schemas = list(_session_paths[raw])
            return
        before = self.search_path_set_schemas
        super()._handle_search_path(cursor)
        after = self.search_path_set_schemas
        if raw is None or after is before:  # nothing was sent
            return
        if after is not None and raw.autocommit and raw.info.transaction_status == TransactionStatus.IDLE:
            _session_paths[raw] = tuple(after)
        else:
            _session_paths.pop(raw, None)
