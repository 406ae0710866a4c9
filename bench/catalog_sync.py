"""P2: catalog sync plus certification of a 1,000-tool and a 5,000-tool server, in seconds.

    python bench/catalog_sync.py [--tools 1000 5000] [--runs 5] [--page-size 0] [--in-process] [--profile changed|unchanged]
    python bench/catalog_sync.py --over-limit 100000 [--page-size 1000]

A stateless streamable-HTTP SDK server on loopback, in a process of its own (as a tenant's
server would be: its work is not ours), lists `--tools` distinct tools (the test catalog's
`make_tools`, all of them contract-compliant), registered for a tenant in the benchmark's own
database (recreated, see `_django.py`). Timed: `catalog_sync` through the
service, which reads the listing twice, stores a catalog version with its diff and certifies
every new or changed tool, all in one transaction. For each size:

- first sync: registration, discovery probe, every tool new;
- changed re-sync (the P2 figure): every description differs from the last run, so every tool
  is changed and certified again; median, min and max of `--runs`;
- unchanged re-sync: the same listing again, with the number of tool rows it rewrote;
- the network part alone (two `tools/list` reads), so the rest is ours.
`--in-process` runs the server in a thread of this process instead (how this benchmark measured
before; the server's work then competes with ours for the interpreter).

`--profile` runs one more re-sync of that kind under cProfile and prints where the time went.

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
from typing import Any

# Loopback servers are private hosts (M2); a benchmark, like the tests, may reach them.
os.environ.setdefault("ASIXTO_ALLOW_PRIVATE_HOSTS", "1")

GOAL_SECONDS = {1000: 2.0, 5000: 5.0}
CATALOG_SCRIPT = str(Path(__file__).resolve().parent.parent / "tests" / "support" / "catalog_server.py")


def serve(count: int, page_size: int) -> None:
    """The catalog server process: MCP at /mcp; POST /revision/<n> switches to `changed(base, n)`
    (0: the base catalog). Prints its URL, then serves until its stdin closes."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import mcp_types as types
    from mcp.server import Server

    from tests.support.catalog_server import make_tools
    from tests.support.mcp_apps import streamable_app
    from tests.support.mcp_servers import serve_asgi

    base = make_tools(count)
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
            tools = changed(base, revision) if revision else base
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

    def __init__(self, count: int, page_size: int, in_process: bool):
        self.count, self.page_size, self.in_process = count, page_size, in_process

    def __enter__(self):
        if self.in_process:
            self._thread_server = _ThreadServer(self.count, self.page_size)
            self.url = self._thread_server.start()
        else:
            self.process = subprocess.Popen(
                [sys.executable, __file__, "--serve", "--tools", str(self.count), "--page-size", str(self.page_size)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )
            self.url = self.process.stdout.readline().strip()
        return self

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
    def __init__(self, count: int, page_size: int):
        import mcp_types as types

        from tests.support.catalog_server import make_tools

        self.base = make_tools(count)
        self.page_size = page_size
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

        tools = changed(self.base, revision) if revision else self.base
        self.models = [types.Tool.model_validate(tool) for tool in tools]

    def stop(self) -> None:
        self._serving.__exit__(None, None, None)


def changed(tools: list[dict[str, Any]], run: int) -> list[dict[str, Any]]:
    """The same tools with every description altered: a catalog where everything changed."""
    return [{**tool, "description": f"{tool['description']} Revisión {run}."} for tool in tools]


def summary(label: str, samples: list[float]) -> str:
    return (
        f"{label}: median {statistics.median(samples):.3f} s "
        f"(min {min(samples):.3f}, max {max(samples):.3f}, n={len(samples)})"
    )


def row_addresses(server) -> dict:
    """Each tool row's physical address: an UPDATE gives the row a new one."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT id, ctid::text FROM tools_tool WHERE server_id = %s", [server.pk])
        return dict(cursor.fetchall())


def bench_size(tenant, count: int, args) -> None:
    from django_tenants.utils import tenant_context

    from tests.support.catalog_server import make_tools
    from tools import mcp
    from tools.models import Tool
    from tools.services import catalog_sync, server_create, server_target

    base = make_tools(count)
    profiler = None
    with Catalog(count, args.page_size, args.in_process) as catalog, tenant_context(tenant):
        server = server_create(data={"slug": f"inventario{count}"[:20], "transport": "streamable_http", "url": f"{catalog.url}/mcp"})
        start = time.perf_counter()
        catalog_sync(server=server)
        first = time.perf_counter() - start
        certified = Tool.objects.filter(server=server, certification="certified").count()
        assert certified == count, f"only {certified} of {count} tools certified"

        network = []
        for _ in range(args.runs):
            start = time.perf_counter()
            mcp.list_tools(server_target(server))
            mcp.list_tools(server_target(server))
            network.append(time.perf_counter() - start)

        resync_changed = []
        for run in range(1, args.runs + 1):
            catalog.set(run)
            start = time.perf_counter()
            version = catalog_sync(server=server)
            resync_changed.append(time.perf_counter() - start)
            assert len(version.diff["changed"]) == count, "every tool should have changed"
            fresh = Tool.objects.filter(server=server, certified_at__gte=version.created_at, certification="certified")
            assert fresh.count() == count, "every tool should have been certified again"

        stored = list(Tool.objects.filter(server=server, removed_in__isnull=True).order_by("position")
                      .values_list("definition", flat=True))
        assert stored == changed(base, args.runs), "the stored catalog should be the server's, in its order"

        resync_same, rewritten = [], []
        for _ in range(args.runs):
            before = row_addresses(server)
            start = time.perf_counter()
            version = catalog_sync(server=server)
            resync_same.append(time.perf_counter() - start)
            assert not version.has_changes
            after = row_addresses(server)
            rewritten.append(sum(1 for pk, address in after.items() if before.get(pk) != address))

        if args.profile:
            if args.profile == "changed":
                catalog.set(args.runs + 1)
            profiler = cProfile.Profile()
            profiler.enable()
            catalog_sync(server=server)
            profiler.disable()

    median = statistics.median(resync_changed)
    goal = GOAL_SECONDS.get(count)
    verdict = f"  goal ≤ {goal:.0f} s: {'met' if median <= goal else 'NOT met'}" if goal else ""
    pages = f"{args.page_size} per page" if args.page_size else "one page"
    where = "a thread of this process" if args.in_process else "a process of its own"
    print(f"P2 catalog sync + certification, {count} tools over loopback streamable HTTP ({pages}, server in {where}):")
    print(f"  first sync (probe + {count} new tools): {first:.3f} s")
    print("  " + summary(f"changed re-sync, all {count} re-certified", resync_changed) + verdict)
    print("  " + summary("unchanged re-sync", resync_same) + f"; tool rows rewritten: {max(rewritten)} of {count}")
    print("  " + summary("of which network: two tools/list reads", network))
    if profiler is not None:
        print(f"\nProfile of one {args.profile} re-sync (top 30; BENCH_SORT=tottime for self time):")
        pstats.Stats(profiler).sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(30)


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
    parser.add_argument("--profile", choices=["changed", "unchanged"])
    parser.add_argument("--over-limit", type=int, metavar="N", help="serve N tools over stdio and measure the refusal")
    parser.add_argument("--in-process", action="store_true", help="run the catalog server in a thread of this process")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the server process
    args = parser.parse_args()
    if args.serve:
        serve(args.tools[0], args.page_size)
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
