"""P2: catalog sync plus certification of a 1,000-tool server, in seconds.

    python bench/catalog_sync.py [--tools 1000] [--runs 5] [--page-size 0] [--profile]

A stateless streamable-HTTP SDK server on loopback lists `--tools` distinct tools (the test
catalog's `make_tools`, all of them contract-compliant), registered for a tenant in the
benchmark's own database (recreated, see `_django.py`). Timed: `catalog_sync` through the service, which
reads the listing twice, stores a catalog version with its diff and certifies every new or
changed tool, all in one transaction.

- first sync: registration, discovery probe, 1,000 new tools;
- changed re-sync (the P2 figure): every description differs from the last run, so every tool
  is changed and certified again; median, min and max of `--runs`;
- unchanged re-sync: the same listing again.
The network part alone (two `tools/list` reads) is reported too, so the rest is ours.
`--profile` runs one more changed re-sync under cProfile and prints where the time went.
"""

import argparse
import cProfile
import os
import pstats
import statistics
import time
from typing import Any

# Loopback servers are private hosts (M2); a benchmark, like the tests, may reach them.
os.environ.setdefault("ASIXTO_ALLOW_PRIVATE_HOSTS", "1")

from _django import setup  # noqa: E402

GOAL_SECONDS = 2.0


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--page-size", type=int, default=0, help="tools per tools/list page (0: one page)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    setup()
    from django.db import connection
    from django_tenants.utils import tenant_context

    from tenants.services import tenant_create
    from tests.support.catalog_server import make_tools
    from tests.support.mcp_servers import serve_asgi
    from tools import mcp
    from tools.models import Tool
    from tools.services import catalog_sync, server_create, server_target

    tenant = tenant_create(slug="bench-catalog", name="Bench Catalog").tenant
    connection.set_schema_to_public()
    tenant.scenarios = ["inventario"]
    tenant.save(update_fields=["scenarios"])

    base = make_tools(args.tools)
    catalog = Catalog(base)
    with serve_asgi(catalog.app(args.page_size)) as url, tenant_context(tenant):
        server = server_create(data={"slug": "inventario", "transport": "streamable_http", "url": f"{url}/mcp"})
        start = time.perf_counter()
        catalog_sync(server=server)
        first = time.perf_counter() - start
        certified = Tool.objects.filter(server=server, certification="certified").count()
        assert certified == args.tools, f"only {certified} of {args.tools} tools certified"

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
            assert len(version.diff["changed"]) == args.tools, "every tool should have changed"
            fresh = Tool.objects.filter(server=server, certified_at__gte=version.created_at, certification="certified")
            assert fresh.count() == args.tools, "every tool should have been certified again"

        stored = list(Tool.objects.filter(server=server, removed_in__isnull=True).order_by("position")
                      .values_list("definition", flat=True))
        assert stored == catalog.tools, "the stored catalog should be the server's, in its order"

        resync_same = []
        for _ in range(args.runs):
            start = time.perf_counter()
            version = catalog_sync(server=server)
            resync_same.append(time.perf_counter() - start)
            assert not version.has_changes

        if args.profile:
            catalog.set(changed(base, args.runs + 1))
            profiler = cProfile.Profile()
            profiler.enable()
            catalog_sync(server=server)
            profiler.disable()

    median = statistics.median(resync_changed)
    pages = f"{args.page_size} per page" if args.page_size else "one page"
    print(f"P2 catalog sync + certification, {args.tools} tools over loopback streamable HTTP ({pages}):")
    print(f"  first sync (probe + {args.tools} new tools): {first:.3f} s")
    print("  " + summary(f"changed re-sync, all {args.tools} re-certified", resync_changed)
          + f"  goal ≤ {GOAL_SECONDS:.0f} s: {'met' if median <= GOAL_SECONDS else 'NOT met'}")
    print("  " + summary("unchanged re-sync", resync_same))
    print("  " + summary("of which network: two tools/list reads", network))
    if args.profile:
        print("\nProfile of one changed re-sync (cumulative, top 30):")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
