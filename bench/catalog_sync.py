"""P2: catalog sync plus certification of a 1,000-tool and a 5,000-tool server, in seconds.

    python bench/catalog_sync.py [--tools 1000 5000] [--runs 5] [--distinct] [--changed-percent 100]
                                 [--forget-schemas] [--page-size 0] [--in-process]
                                 [--profile first|changed|unchanged]
    python bench/catalog_sync.py --over-limit 100000 [--page-size 1000]

A stateless streamable-HTTP SDK server on loopback, in a process of its own (as a tenant's
server would be: its work is not ours), lists `--tools` tools, registered for a tenant in the
benchmark's own database (recreated, see `_django.py`). By default the tools are the test
catalog's `make_tools`: distinct names, but one description pattern and one schema shape, so
the caches keyed by a schema hide most of certification's cost. `--distinct` gives every tool
its own words, schema shapes, enum values and patterns (`_catalogs.distinct_tools`, seeded),
as a real large server has: that is the P2 figure. Every tool is contract-compliant.

Timed: `catalog_sync` through the service, which reads the listing twice, stores a catalog
version with its diff and certifies every new or changed tool, all in one transaction. For each
size:

- first sync: registration, discovery probe, every tool new;
- changed re-sync (the P2 figure): `--changed-percent` of the tools (all by default) have a
  description that differs from the last run, so they are changed and certified again; median,
  min and max of `--runs`. Their schemas are the last run's, so the schema checks kept per
  process answer; `--forget-schemas` empties them first (every schema checked as new);
- unchanged re-sync: the same listing again, with the number of tool rows it rewrote; its two
  reads answer the bytes the stored catalog was sealed with (tools/listing_seal.py), so nothing
  is parsed: checked after the runs, outside the timing, by a read given the seal coming back
  unread;
- the network part alone, so the rest is ours: two `tools/list` reads as a first or changed
  sync makes them (the second recognised by its bytes, tools/mcp/repeats.py), and two as an
  unchanged sync makes them (both recognised by the seal).

Each figure is wall time and CPU time: of this process (`time.process_time()`: the sync, and
the server's thread too with `--in-process`), of the catalog server's process (from
/proc/<pid>/stat: serialising the listing, not our work) and of the PostgreSQL backend serving
this process's connection (also /proc). The machine is shared: the load average
(`os.getloadavg()`) is printed before and after, and CPU seconds are the figure to compare.

Not covered: the Celery worker's part (the task only loads the server and calls the service
timed here), the routing index rebuilt after a sync (queued, not run: no worker), probes (C8,
C9: a sync does not call tools), stdio and SSE transports, several syncs at once, pages of the
listing unless `--page-size`. Nothing is compared across variants in one run (each figure is
held against the goal), so no variants alternate; compare two branches by running each twice,
alternately.
`--in-process` runs the server in a thread of this process instead (how this benchmark measured
before; the server's work then competes with ours for the interpreter).

`--profile` runs one more re-sync of that kind under cProfile and prints where the time went.

Measured for issue 22 (P2 on distinct tools), 2026-12-04: `python bench/catalog_sync.py --distinct
--tools 1000 5000 --runs 3`, the commit before the work (f2eba73) and the work alternated twice,
each on its own database (ASIXTO_BENCH_DATABASE), on the 2-CPU machine shared with other work
(load average 3.5–5.7). CPU = this process + its PostgreSQL backend (what the goal is held
against), in seconds; the two rounds' medians:

                               before (2 rounds)   after (2 rounds)    goal
    5,000 first sync           CPU 5.31, 5.75      CPU 4.07, 4.20      ≤ 5: met
    5,000 changed re-sync      CPU 6.42, 6.84      CPU 4.27, 4.44      ≤ 5: met
    5,000 unchanged re-sync    CPU 2.53, 2.77      CPU 2.27, 2.22      ≤ 1: NOT met
    1,000 first sync           CPU 1.35, 1.25      CPU 0.94, 0.95      ≤ 2: met
    1,000 changed re-sync      CPU 1.03, 1.03      CPU 0.74, 0.78      ≤ 2: met
    1,000 unchanged re-sync    CPU 0.37, 0.42      CPU 0.39, 0.45
    5,000 changed, `--forget-schemas` (every schema checked as new): CPU 4.73 after (load 3–4).
    5,000 wall, first / changed / unchanged: 7.5–10.1 / 8.7–13.6 / 8.4–9.1 s before, 11.0–12.6 /
    10.2–10.6 / 5.8–8.7 s after. At that load the wall time measures the machine; it also holds
    the catalog server's own 1.8–2.3 s of CPU (serialising 10 MB twice, another process).

Where the CPU of a changed 5,000-tool re-sync goes after the work (profiled): the two tools/list
reads 1.6–1.8 s, inside the SDK (parsing the 10 MB answer, about 0.5 s a read, and checking the
first answer's 5,000 pydantic models, about 0.4 s; the second answer, equal to the first, is not
checked again: tools/mcp/repeats.py); certification 0.85 s (descriptions 0.35 s, the other rules
0.3 s; the re-sync changes descriptions only, so the schema checks kept by each schema's digest
answer, tools/rules/validation.py: a first sync checks all 10,000 schemas, 0.5–0.7 s); hashing the
listing 0.17 s; reading back the stored rows and the diff 0.4 s; the UPDATE 0.1 s here and
0.45 s in PostgreSQL. The unchanged re-sync does no certification and writes nothing (0.2–0.3 s
of ours): its two SDK reads alone take more than the 1 s goal.

The unchanged re-sync, known by its bytes (tools/listing_seal.py, tools/mcp/repeats.py), measured
2026-12-04: `python bench/catalog_sync.py --distinct --tools 1000 5000 --runs 3`, the commit
before (ac7a3b8) and the work alternated twice, each on its own database, the machine shared
with other work (load average 4.6–18 over the runs, printed by each). CPU = this process + its
PostgreSQL backend, medians, in seconds; wall beside it:

                               before (2 rounds)             after (2 rounds)              goal
    5,000 unchanged re-sync    CPU 2.48, 2.49  wall 5.7, 8.4   CPU 0.15, 0.14  wall 4.9, 2.8   ≤ 1: met
    5,000 changed re-sync      CPU 5.16, 4.85  wall 9.4, 9.6   CPU 4.22, 4.23  wall 8.3, 6.8   ≤ 5: met
    5,000 first sync           CPU 4.66, 4.90  wall 8.7, 9.4   CPU 3.94, 3.83  wall 10.6, 7.8  ≤ 5: met
    1,000 unchanged re-sync    CPU 0.47, 0.49  wall 1.1, 1.1   CPU 0.05, 0.05  wall 1.8, 0.4
    1,000 changed re-sync      CPU 0.96, 0.94  wall 4.9, 3.1   CPU 0.88, 0.76  wall 7.0, 1.1   ≤ 2: met
    1,000 first sync           CPU 1.24, 1.43  wall 7.1, 3.6   CPU 1.11, 1.02  wall 5.1, 1.4   ≤ 2: met

The unchanged re-sync parses nothing: its two reads cost 0.06 s of ours (receiving and hashing
2 × 10 MB), the seal's context (reading the live rows, twice) and marking the sync the rest. Its
wall time is the catalog server's (2.6–2.8 s of CPU in its own process to serialise the listing
twice) and the machine's load. The first and changed syncs gain the second read's parse (about
0.5 s at 5,000 tools), now recognised by its bytes instead of compared once parsed. Not covered
by the recognition, so as before: answers streamed as SSE (SDK 2.3 servers answer JSON unless a
request runs long; older ones stream by default), compressed answers and the HTTP+SSE transport.
stdio lines are recognised too (tests/tools/test_catalog_unchanged.py), not measured here.

`--over-limit N` instead serves N tools over stdio (a child process, so this process's peak
memory is the sync's alone) against ASIXTO_MAX_TOOLS_PER_SERVER, and reports how long the
refusal took, how many tools were read and this process's peak RSS.
"""

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, NamedTuple

# Loopback servers are private hosts (M2); a benchmark, like the tests, may reach them.
os.environ.setdefault("ASIXTO_ALLOW_PRIVATE_HOSTS", "1")

GOAL_SECONDS = {1000: 2.0, 5000: 5.0}
UNCHANGED_GOAL_SECONDS = {5000: 1.0}
CATALOG_SCRIPT = str(Path(__file__).resolve().parent.parent / "tests" / "support" / "catalog_server.py")


def catalog(count: int, distinct: bool) -> list[dict[str, Any]]:
    if distinct:
        from _catalogs import distinct_tools

        return distinct_tools(count)
    from tests.support.catalog_server import make_tools

    return make_tools(count)


def serve(count: int, page_size: int, distinct: bool, percent: int) -> None:
    """The catalog server process: MCP at /mcp; POST /revision/<n> switches to `changed(base, n)`
    (0: the base catalog). Prints its URL, then serves until its stdin closes."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import mcp_types as types
    from mcp.server import Server

    from tests.support.mcp_apps import streamable_app
    from tests.support.mcp_servers import serve_asgi

    base = catalog(count, distinct)
    state = {"models": [types.Tool.model_validate(tool) for tool in base]}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        models = state["models"]
        size = page_size or len(models)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + size
        return types.ListToolsResult(tools=models[start:end], next_cursor=str(end) if end < len(models) else None)

    mcp_app = streamable_app(Server("asixto-bench-catalog", version="1.0.0", on_list_tools=list_tools))

    async def app(scope, receive, send):
        if scope["type"] == "http" and scope["path"].startswith("/revision/"):
            revision = int(scope["path"].rsplit("/", 1)[1])
            tools = changed(base, revision, percent) if revision else base
            state["models"] = [types.Tool.model_validate(tool) for tool in tools]
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await mcp_app(scope, receive, send)

    with serve_asgi(app) as url:
        print(url, flush=True)
        sys.stdin.read()


class Catalog:
    """The catalog server, in a process of its own (or a thread, `in_process`); `set(n)` switches
    its listing to revision n outside the timing."""

    def __init__(self, count: int, args):
        self.count, self.page_size, self.in_process = count, args.page_size, args.in_process
        self.distinct, self.percent = args.distinct, args.changed_percent

    def __enter__(self):
        if self.in_process:
            self._thread_server = _ThreadServer(self.count, self.page_size, self.distinct, self.percent)
            self.url = self._thread_server.start()
        else:
            self.process = subprocess.Popen(
                [sys.executable, __file__, "--serve", "--tools", str(self.count), "--page-size", str(self.page_size),
                 "--changed-percent", str(self.percent), *(["--distinct"] if self.distinct else [])],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )
            self.url = self.process.stdout.readline().strip()
        return self

    def cpu(self) -> float:
        """CPU seconds the server's own process has used (0 in-process: they count as ours)."""
        return 0.0 if self.in_process else process_cpu(self.process.pid)

    def set(self, revision: int) -> None:
        if self.in_process:
            self._thread_server.set(revision)
        else:
            urllib.request.urlopen(urllib.request.Request(f"{self.url}/revision/{revision}", method="POST")).read()

    def __exit__(self, *exc):
        if self.in_process:
            self._thread_server.stop()
        else:
            self.process.stdin.close()
            self.process.wait(30)


class _ThreadServer:
    def __init__(self, count: int, page_size: int, distinct: bool, percent: int):
        import mcp_types as types

        self.base = catalog(count, distinct)
        self.page_size, self.percent = page_size, percent
        self.models = [types.Tool.model_validate(tool) for tool in self.base]

    def start(self) -> str:
        import mcp_types as types
        from mcp.server import Server

        from tests.support.mcp_apps import streamable_app
        from tests.support.mcp_servers import serve_asgi

        async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
            size = self.page_size or len(self.models)
            start = int(params.cursor) if params is not None and params.cursor else 0
            end = start + size
            return types.ListToolsResult(
                tools=self.models[start:end], next_cursor=str(end) if end < len(self.models) else None
            )

        self._serving = serve_asgi(streamable_app(Server("asixto-bench-catalog", version="1.0.0", on_list_tools=list_tools)))
        return self._serving.__enter__()

    def set(self, revision: int) -> None:
        import mcp_types as types

        tools = changed(self.base, revision, self.percent) if revision else self.base
        self.models = [types.Tool.model_validate(tool) for tool in tools]

    def stop(self) -> None:
        self._serving.__exit__(None, None, None)


def changed(tools: list[dict[str, Any]], run: int, percent: int = 100) -> list[dict[str, Any]]:
    """The same tools with `percent` of the descriptions altered (spread evenly over the listing)."""
    return [
        {**tool, "description": f"{tool['description']} Revisión {run}."} if is_changed(index, percent) else tool
        for index, tool in enumerate(tools)
    ]


def is_changed(index: int, percent: int) -> bool:
    return index * percent // 100 != (index + 1) * percent // 100


def process_cpu(pid: int) -> float:
    """User plus system CPU seconds of process `pid` so far (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sample(NamedTuple):
    wall: float
    ours: float  # CPU of this process
    server: float  # CPU of the catalog server's process
    database: float  # CPU of the PostgreSQL backend of this process's connection


def measured(catalog: "Catalog", call):
    """Run `call()`; its result and a Sample."""
    backend = database_pid()
    before = (time.perf_counter(), time.process_time(), catalog.cpu(), process_cpu(backend))
    result = call()
    after = (time.perf_counter(), time.process_time(), catalog.cpu(), process_cpu(backend))
    return result, Sample(*(end - start for start, end in zip(before, after)))


def database_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def summary(label: str, samples: list[Sample]) -> str:
    def spread(values):
        return f"median {statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f})"

    return (
        f"{label} (n={len(samples)}): wall {spread([s.wall for s in samples])} s; "
        f"CPU ours {spread([s.ours for s in samples])} s, server {statistics.median([s.server for s in samples]):.2f} s, "
        f"PostgreSQL {statistics.median([s.database for s in samples]):.2f} s"
    )


def load() -> str:
    return "load average " + ", ".join(f"{value:.2f}" for value in os.getloadavg())


def row_addresses(server) -> dict:
    """Each tool row's physical address: an UPDATE gives the row a new one."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT id, ctid::text FROM tools_tool WHERE server_id = %s", [server.pk])
        return dict(cursor.fetchall())


def bench_size(tenant, count: int, args) -> None:
    from django_tenants.utils import tenant_context

    from tools import mcp
    from tools.listing_seal import standing_pages
    from tools.models import CatalogVersion, Tool
    from tools.services import catalog_sync, server_create, server_target

    base = catalog(count, args.distinct)
    every = args.changed_percent == 100
    changed_count = sum(1 for index in range(count) if is_changed(index, args.changed_percent))
    profiler = cProfile.Profile() if args.profile else None
    load_before = load()

    def profiled(kind, call):
        if profiler is None or args.profile != kind:
            return call()
        profiler.enable()
        try:
            return call()
        finally:
            profiler.disable()

    with Catalog(count, args) as server_process, tenant_context(tenant):
        server = server_create(data={"slug": f"inventario{count}"[:20], "transport": "streamable_http", "url": f"{server_process.url}/mcp"})
        _version, first = measured(server_process, lambda: profiled("first", lambda: catalog_sync(server=server)))
        certified = Tool.objects.filter(server=server, certification="certified").count()
        assert certified == count, f"only {certified} of {count} tools certified"

        network, network_sealed = [], []
        for _ in range(args.runs):
            target, sealed = server_target(server), standing_pages(server)
            # As the sync reads: the second reading is given the first (tools.mcp.repeats), and
            # an unchanged sync's first reading the stored seal.
            network.append(measured(server_process, lambda: mcp.list_tools(target, previous=mcp.list_tools(target)))[1])
            network_sealed.append(measured(
                server_process, lambda: mcp.list_tools(target, previous=mcp.list_tools(target, known=sealed)))[1])

        resync_changed = []
        for run in range(1, args.runs + 1):
            server_process.set(run)
            if args.forget_schemas:
                forget_schema_checks()
            version, sample = measured(server_process, lambda: profiled("changed", lambda: catalog_sync(server=server)))
            resync_changed.append(sample)
            assert len(version.diff["changed"]) == changed_count, f"{changed_count} tools should have changed"
            fresh = Tool.objects.filter(server=server, certified_at__gte=version.created_at, certification="certified")
            assert fresh.count() == changed_count, f"{changed_count} tools should have been certified again"

        stored = list(Tool.objects.filter(server=server, removed_in__isnull=True).order_by("position")
                      .values_list("definition", flat=True))
        assert stored == changed(base, args.runs, args.changed_percent), "the stored catalog should be the server's, in its order"

        resync_same, rewritten = [], []
        for _ in range(args.runs):
            before, versions = row_addresses(server), CatalogVersion.objects.filter(server=server).count()
            current, sample = measured(server_process, lambda: profiled("unchanged", lambda: catalog_sync(server=server)))
            resync_same.append(sample)
            # A sync that changes nothing stores no version: it returns the current one (issue 10).
            assert current.pk == version.pk and CatalogVersion.objects.filter(server=server).count() == versions
            after = row_addresses(server)
            rewritten.append(sum(1 for pk, address in after.items() if before.get(pk) != address))
        unread = mcp.list_tools(server_target(server), known=standing_pages(server)).unread
        assert unread, "the stored seal should stand: an unchanged listing is recognised by its bytes"

    goal, same_goal = GOAL_SECONDS.get(count), UNCHANGED_GOAL_SECONDS.get(count)
    pages = f"{args.page_size} per page" if args.page_size else "one page"
    where = "a thread of this process" if args.in_process else "a process of its own"
    kind = "distinct tools (own words and schemas)" if args.distinct else "tools of one shape"
    print(f"P2 catalog sync + certification, {count} {kind} over loopback streamable HTTP ({pages}, server in {where}):")
    print(f"  {load_before} before, {load()} after (2 CPUs shared: compare CPU seconds)")
    print("  " + summary(f"first sync (probe + {count} new tools)", [first]) + verdict(first, goal))
    what = f"all {count}" if every else f"{changed_count} of {count} ({args.changed_percent}%)"
    print("  " + summary(f"changed re-sync, {what} re-certified", resync_changed) + verdict(resync_changed, goal))
    print("  " + summary("unchanged re-sync", resync_same) + verdict(resync_same, same_goal)
          + f"; tool rows rewritten: {max(rewritten)} of {count}")
    print("  " + summary("of which network: two tools/list reads, the second recognised", network))
    print("  " + summary("of which network: two tools/list reads recognised by the seal", network_sealed))
    reads = statistics.median([s.ours for s in network])
    sealed_reads = statistics.median([s.ours for s in network_sealed])
    beyond = {label: statistics.median([s.ours + s.database for s in samples]) - base
              for label, samples, base in (("first", [first], reads), ("changed", resync_changed, reads),
                                           ("unchanged", resync_same, sealed_reads))}
    print(f"  beyond the two reads (the SDK's parsing and checking of the listing, {reads:.2f} s; recognised by the "
          f"seal, {sealed_reads:.2f} s): CPU ours + PostgreSQL " + ", ".join(f"{label} {value:.2f} s" for label, value in beyond.items()))
    if profiler is not None:
        print(f"\nProfile of the {args.profile} sync(s) (top 30; BENCH_SORT=tottime for self time):")
        pstats.Stats(profiler).sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(30)


def forget_schema_checks() -> None:
    """Empty what certification keeps per process about schemas and patterns, so a re-sync checks
    every schema as if it were new (a changed re-sync here changes descriptions only)."""
    from tools.rules import keywords, validation

    validation.SCHEMA_CHECKS.clear()
    for kept in (validation._schema_error, validation._prepare, keywords._pattern_problem, keywords._regex):
        kept.cache_clear()


def verdict(samples, goal) -> str:
    """Against the goal, on CPU seconds of this process (wall time on a shared machine measures the load)."""
    if goal is None:
        return ""
    samples = samples if isinstance(samples, list) else [samples]
    cpu = statistics.median([s.ours + s.database for s in samples])
    return f"  goal ≤ {goal:.0f} s (CPU ours + PostgreSQL {cpu:.2f} s): {'met' if cpu <= goal else 'NOT met'}"


def bench_over_limit(tenant, count: int, args) -> None:
    from django.conf import settings
    from django.db import connection
    from django_tenants.utils import tenant_context

    from asixto.errors import ApplicationError
    from tenants.models import ApprovedCommand
    from tools.models import CatalogVersion, Tool
    from tools.servers import server_create
    from tools.sync import catalog_sync

    connection.set_schema_to_public()
    flags = ["--tools", str(count)] + (["--page-size", str(args.page_size)] if args.page_size else [])
    ApprovedCommand.objects.create(slug="bench-catalog", executable=sys.executable, base_args=[CATALOG_SCRIPT, *flags])
    with tenant_context(tenant):
        server = server_create(data={"slug": "grande", "transport": "stdio", "command": "bench-catalog", "timeout_seconds": 120})
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        try:
            catalog_sync(server=server)
            outcome = "stored (not refused!)"
        except ApplicationError as exc:
            outcome = f"refused: {exc.message}"
        except Exception as exc:  # e.g. the transport's own message-size bound
            outcome = f"failed: {exc}"
        elapsed = time.perf_counter() - start
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        stored = (CatalogVersion.objects.filter(server=server).count(), Tool.objects.filter(server=server).count())
    pages = f"{args.page_size} per page" if args.page_size else "one page"
    print(f"Over the limit: {count} tools over stdio ({pages}), ASIXTO_MAX_TOOLS_PER_SERVER={settings.ASIXTO_MAX_TOOLS_PER_SERVER}:")
    print(f"  {outcome}")
    print(f"  {elapsed:.3f} s; stored versions, tools: {stored}")
    print(f"  peak RSS of this process: {rss_before / 1024:.0f} MiB before, {rss_after / 1024:.0f} MiB after")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--page-size", type=int, default=0, help="tools per tools/list page (0: one page)")
    parser.add_argument("--distinct", action="store_true", help="every tool its own words and schemas (the P2 figure)")
    parser.add_argument("--changed-percent", type=int, default=100, help="share of tools a changed re-sync changes")
    parser.add_argument("--forget-schemas", action="store_true",
                        help="before each changed re-sync, forget the schema checks kept per process (all schemas as new)")
    parser.add_argument("--profile", choices=["first", "changed", "unchanged"], help="cProfile those syncs (all runs)")
    parser.add_argument("--over-limit", type=int, metavar="N", help="serve N tools over stdio and measure the refusal")
    parser.add_argument("--in-process", action="store_true", help="run the catalog server in a thread of this process")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the server process
    args = parser.parse_args()
    if args.serve:
        serve(args.tools[0], args.page_size, args.distinct, args.changed_percent)
        return
    from _django import setup

    # A benchmark of N tools needs a limit of at least N (the default is 5,000).
    os.environ.setdefault("ASIXTO_MAX_TOOLS_PER_SERVER", str(max(5000, *args.tools)))
    setup()
    from django.db import connection

    from tenants.services import tenant_create

    tenant = tenant_create(slug="bench-catalog", name="Bench Catalog").tenant
    connection.set_schema_to_public()
    tenant.scenarios = ["inventario"]
    tenant.save(update_fields=["scenarios"])
    if args.over_limit:
        bench_over_limit(tenant, args.over_limit, args)
        return
    for count in args.tools:
        bench_size(tenant, count, args)
        connection.set_schema_to_public()


if __name__ == "__main__":
    main()
