"""P2: catalog sync plus certification of a 1,000-tool and a 5,000-tool server, in seconds.

    python bench/catalog_sync.py [--tools 1000 5000] [--runs 5] [--page-size 0] [--profile changed|unchanged]
    python bench/catalog_sync.py --over-limit 100000 [--page-size 1000]

A stateless streamable-HTTP SDK server on loopback lists `--tools` distinct tools (the test
catalog's `make_tools`, all of them contract-compliant), registered for a tenant in the
benchmark's own database (recreated, see `_django.py`). Timed: `catalog_sync` through the
service, which reads the listing twice, stores a catalog version with its diff and certifies
every new or changed tool, all in one transaction. For each size:

- first sync: registration, discovery probe, every tool new;
- changed re-sync (the P2 figure): every description differs from the last run, so every tool
  is changed and certified again; median, min and max of `--runs`;
- unchanged re-sync: the same listing again; it must rewrite no tool row (checked);
- the network part alone (two `tools/list` reads), so the rest is ours. The server runs in this
  process, so its own work (building the listing) is in every figure.

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
import sys
import time
from pathlib import Path
from typing import Any

# Loopback servers are private hosts (M2); a benchmark, like the tests, may reach them.
os.environ.setdefault("ASIXTO_ALLOW_PRIVATE_HOSTS", "1")

from _django import setup  # noqa: E402

GOAL_SECONDS = {1000: 2.0, 5000: 5.0}
CATALOG_SCRIPT = str(Path(__file__).resolve().parent.parent / "tests" / "support" / "catalog_server.py")


class Catalog:
    """The server's current listing; the benchmark swaps it between runs (outside the timing)."""

    def __init__(self, tools: list[dict[str, Any]]):
        self.set(tools)

    def set(self, tools: list[dict[str, Any]]) -> None:
        import mcp_types as types

        self.tools = tools
        self.models = [types.Tool.model_validate(tool) for tool in tools]

    def app(self, page_size: int):
        import mcp_types as types
        from mcp.server import Server

        from tests.support.mcp_apps import streamable_app

        async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
            size = page_size or len(self.models)
            start = int(params.cursor) if params is not None and params.cursor else 0
            end = start + size
            return types.ListToolsResult(
                tools=self.models[start:end], next_cursor=str(end) if end < len(self.models) else None
            )

        return streamable_app(Server("asixto-bench-catalog", version="1.0.0", on_list_tools=list_tools))


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
    from tests.support.mcp_servers import serve_asgi
    from tools import mcp
    from tools.models import Tool
    from tools.servers import server_create, server_target
    from tools.sync import catalog_sync

    base = make_tools(count)
    catalog = Catalog(base)
    profiler = None
    with serve_asgi(catalog.app(args.page_size)) as url, tenant_context(tenant):
        server = server_create(data={"slug": f"inventario{count}"[:20], "transport": "streamable_http", "url": f"{url}/mcp"})
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
            catalog.set(changed(base, run))
            start = time.perf_counter()
            version = catalog_sync(server=server)
            resync_changed.append(time.perf_counter() - start)
            assert len(version.diff["changed"]) == count, "every tool should have changed"
            fresh = Tool.objects.filter(server=server, certified_at__gte=version.created_at, certification="certified")
            assert fresh.count() == count, "every tool should have been certified again"

        stored = list(Tool.objects.filter(server=server, removed_in__isnull=True).order_by("position")
                      .values_list("definition", flat=True))
        assert stored == catalog.tools, "the stored catalog should be the server's, in its order"

        resync_same = []
        for _ in range(args.runs):
            before = row_addresses(server)
            start = time.perf_counter()
            version = catalog_sync(server=server)
            resync_same.append(time.perf_counter() - start)
            assert not version.has_changes
            assert row_addresses(server) == before, "an unchanged re-sync should rewrite no tool row"

        if args.profile:
            if args.profile == "changed":
                catalog.set(changed(base, args.runs + 1))
            profiler = cProfile.Profile()
            profiler.enable()
            catalog_sync(server=server)
            profiler.disable()

    median = statistics.median(resync_changed)
    goal = GOAL_SECONDS.get(count)
    verdict = f"  goal ≤ {goal:.0f} s: {'met' if median <= goal else 'NOT met'}" if goal else ""
    pages = f"{args.page_size} per page" if args.page_size else "one page"
    print(f"P2 catalog sync + certification, {count} tools over loopback streamable HTTP ({pages}):")
    print(f"  first sync (probe + {count} new tools): {first:.3f} s")
    print("  " + summary(f"changed re-sync, all {count} re-certified", resync_changed) + verdict)
    print("  " + summary("unchanged re-sync (no tool row rewritten)", resync_same))
    print("  " + summary("of which network: two tools/list reads", network))
    if profiler is not None:
        print(f"\nProfile of one {args.profile} re-sync (cumulative, top 30):")
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
    args = parser.parse_args()
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
