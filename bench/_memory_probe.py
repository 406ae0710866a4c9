"""Inside a benchmark's Celery worker (bench/worker_settings.py starts it when BENCH_MEMORY_PROBE
names a directory): a thread that answers the benchmark's questions about the process's memory.

The benchmark writes `ask-N` in the directory (its words: "trim", "baseline"); the thread answers in
`answer-N.json`: the RSS, a full garbage collection, the RSS after it, with "trim" after glibc's
`malloc_trim(0)` (memory the allocator holds but nothing uses goes back to the system), the
threads, Python's allocated blocks, the live objects by type and which types grew (since the
question before, and since the first one or the last that said "baseline"). With
BENCH_TRACEMALLOC=frames, the allocations that grew since then too (tracemalloc, started with the
process: it slows the worker and its snapshots cost memory, so a run that measures RSS goes
without it). With BENCH_MEMORY_HOLDERS=module.qualname, how many objects of that type are alive
and what holds the last of them, nine levels up (the objects that refer to it, four a level: one
that shows no holder is a variable of a running function, which the garbage collector does not
list, or its holders were left out). With BENCH_MEMORY_ROOTS=1 too, what keeps that object alive
(`_roots`): the chains of references down to it from a module's globals, a class, or an object
that something the collector does not list refers to (a running function's variable, whose
frames are named; a C structure). This one costs an index of every reference in the process,
so the RSS read at the next question is higher for it, and reading a running frame's variables
leaves a copy of them on the frame, which later answers of the run may show as a holder."""

import ctypes
import gc
import json
import os
import sys
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path

TOP = 15


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _name(thing) -> str:
    return f"{type(thing).__module__}.{type(thing).__qualname__}"


def _holders(thing, depth: int, ignore: set) -> list:
    """What refers to `thing`, `depth` levels up: [(name, [its holders...]), ...] (a few each)."""
    if depth == 0:
        return []
    found, referrers = [], gc.get_referrers(thing)
    ignore.add(id(referrers))
    for holder in referrers:
        if id(holder) in ignore or type(holder).__name__ == "list_iterator" or (
                type(holder).__name__ == "frame" and holder.f_code.co_filename == __file__):
            continue
        ignore.add(id(holder))
        label = _name(holder)
        if type(holder).__name__ == "frame":
            label += f" {holder.f_code.co_filename}:{holder.f_lineno} {holder.f_code.co_name}"
        if isinstance(holder, dict):
            label += f" keys {sorted(map(str, holder))[:6]}"
        above = _holders(holder, depth - 1, ignore)
        found.append((label, above))
        if len(found) >= 4:
            break
    return found


def _describe(thing) -> str:
    label, kind = _name(thing), type(thing).__name__
    if kind in ("function", "method"):
        code = getattr(thing, "__code__", None)
        label += f" {thing.__qualname__}" + (f" ({code.co_filename}:{code.co_firstlineno})" if code else "")
    elif kind == "frame":
        label += f" {thing.f_code.co_filename}:{thing.f_lineno} {thing.f_code.co_name}"
    elif kind == "cell":
        label += f" of {_name(_contents(thing))}"
    elif isinstance(thing, dict):
        label += f" keys {sorted(map(str, thing))[:6]}"
    return label


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # empty
        return None


def _chain(key: int, parent: dict, by_id: dict) -> list:
    """From the object whose id is `key` down to the first one of the walk (`parent`: who referred to whom)."""
    links = []
    while key is not None:
        links.append(_describe(by_id.get(key)))
        key = parent[key]
    return links


def _roots(thing, limit: int = 200_000, most: int = 12) -> list:
    """What keeps `thing` alive: walking up what refers to it (breadth first, `limit` objects at
    most), the chains down to it from a module's globals or a class (where the walk stops), or
    from an object with more references than the garbage collector lists (held by a running
    function's variable or cell, or by C code). Each: {"root": why, "chain": [from the root down to
    `thing`], "frames": the running frames whose variables hold the root}. The first `most`."""
    me = sys._getframe()
    everything = [o for o in gc.get_objects() if o is not me]
    by_id = {id(o): o for o in everything}
    referrers_of: dict[int, list[int]] = {}
    for holder in everything:
        if type(holder).__name__ == "frame" and holder.f_code.co_filename == __file__:
            continue
        for referent in gc.get_referents(holder):
            referrers_of.setdefault(id(referent), []).append(id(holder))
    holder = referent = None
    module_globals = {id(vars(module)) for module in list(sys.modules.values()) if module is not None}
    parent, queue, position, found = {id(thing): None}, [id(thing)], 0, []
    while position < len(queue) and position < limit and len(found) < most:
        key = queue[position]
        position += 1
        obj = by_id.get(key, thing)
        if key in module_globals or type(obj).__name__ == "module" or (
                isinstance(obj, type) and "<locals>" not in obj.__qualname__):
            found.append({"root": "a module's globals or a class", "key": key, "chain": _chain(key, parent, by_id)})
            obj = None
            continue
        above = referrers_of.get(key, [])
        for holder_id in above:
            if holder_id not in parent:
                parent[holder_id] = key
                queue.append(holder_id)
        # The references made here: `everything` and `by_id` (a tracked object), `obj`,
        # getrefcount's argument; and `thing` and the caller's variable for the first.
        unlisted = sys.getrefcount(obj) - 2 - 2 * (key in by_id) - 2 * (obj is thing) - len(above)
        if unlisted > 0 and type(obj).__name__ not in ("frame", "function", "code"):
            found.append({"root": f"{unlisted} reference(s) the collector does not list", "key": key,
                          "chain": _chain(key, parent, by_id)})
        obj = None
    frames = list(sys._current_frames().values())
    for root in found:
        target, root["frames"] = by_id.get(root.pop("key"), thing), []
        for frame in frames:
            while frame is not None:
                if frame.f_code.co_filename != __file__:
                    for name, value in frame.f_locals.items():
                        if value is target or (type(target).__name__ == "cell" and _contents(target) is value):
                            code = frame.f_code
                            root["frames"].append(f"{code.co_filename}:{frame.f_lineno} {code.co_name}: {name}")
                frame = frame.f_back
        target = None
    return found


def _types() -> Counter:
    return Counter(_name(thing) for thing in gc.get_objects())


class Probe:
    def __init__(self, directory: Path, frames: int):
        self.directory, self.frames = directory, frames
        self.first_types: Counter | None = None
        self.last_types: Counter = Counter()
        self.first_snapshot = None

    def answer(self, *, trim: bool, baseline: bool) -> dict:
        """`baseline`: what grew is counted from this answer on (the first answer is one too)."""
        answer = {"rss": _rss()}
        answer["collected"] = gc.collect()
        answer["rss_after_gc"] = _rss()
        if trim:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
            answer["rss_after_trim"] = _rss()
        answer["threads"] = threading.active_count()
        answer["allocated_blocks"] = sys.getallocatedblocks()
        types = _types()
        answer["objects"] = sum(types.values())
        if self.first_types is None or baseline:
            self.first_types = types
        answer["types_grown"] = (types - self.first_types).most_common(TOP)
        answer["types_grown_since_last"] = (types - self.last_types).most_common(5)
        self.last_types = types
        watched = os.environ.get("BENCH_MEMORY_HOLDERS")  # a type's module.qualname: what holds its instances
        if watched:
            everything = gc.get_objects()
            samples = [thing for thing in everything if _name(thing) == watched]
            answer["holders"] = [len(samples)] + [_holders(thing, 9, {id(samples), id(everything)}) for thing in samples[-1:]]
            sample = samples[-1] if samples else None
            del samples, everything
            if sample is not None and os.environ.get("BENCH_MEMORY_ROOTS"):
                answer["roots"] = _roots(sample)
            del sample
        if tracemalloc.is_tracing():
            answer["traced"] = tracemalloc.get_traced_memory()[0]
            snapshot = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap*"),
                 tracemalloc.Filter(False, __file__, all_frames=True)])  # the probe's own
            if self.first_snapshot is None or baseline:
                self.first_snapshot = snapshot
            answer["traced_grown"] = [
                {"size_diff": stat.size_diff, "count_diff": stat.count_diff, "where": stat.traceback.format()[-2 * self.frames:]}
                for stat in snapshot.compare_to(self.first_snapshot, "traceback")[:TOP]]
        return answer

    def serve(self):
        done = set()
        while True:
            for ask in sorted(self.directory.glob("ask-*")):
                if ask.name in done:
                    continue
                done.add(ask.name)
                flags = ask.read_text().split()
                answer = self.answer(trim="trim" in flags, baseline="baseline" in flags)
                written = self.directory / f".{ask.name}.tmp"
                written.write_text(json.dumps(answer))
                written.rename(self.directory / f"answer-{ask.name[4:]}.json")
            time.sleep(0.2)


def start(directory: str):
    frames = int(os.environ.get("BENCH_TRACEMALLOC", "0") or 0)
    if frames:
        tracemalloc.start(frames)
    probe = Probe(Path(directory), frames)
    threading.Thread(target=probe.serve, daemon=True, name="bench-memory-probe").start()
