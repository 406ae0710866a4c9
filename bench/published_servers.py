"""Issue 8: first sync and warm re-sync of the published Python MCP servers over stdio, in seconds.

    python bench/published_servers.py [--runs 3]

`mcp-server-time`, `mcp-server-fetch` and `mcp-server-git` (from `.peers`, see bin/_peers.sh) are
approved as operator commands and registered for a tenant in the benchmark's own database
(recreated, see `_django.py`). For each: the first sync (discovery probe, two listings, every tool
certified), the median re-sync of `--runs` (nothing changed), and, for the ratio, a direct SDK
session that starts the same command and lists its tools once (`mcp.Client`), median of `--runs`.
A stdio sync starts the server once per operation (probe, listing, listing), so most of it is
the server's own start-up (a Python interpreter importing the SDK).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _django import ROOT, setup

PEERS = {
    "time": ("mcp-server-time", "--local-timezone", "Europe/Madrid"),
    "fetch": ("mcp-server-fetch",),
    "git": ("mcp-server-git", "--repository", "{repository}"),
}


def direct_listing_seconds(argv):
    import anyio
    from mcp import Client, StdioServerParameters

    async def listing():
        async with Client(StdioServerParameters(command=argv[0], args=list(argv[1:]))) as client:
            await client.list_tools()

    started = time.perf_counter()
    anyio.run(listing)
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    peers_bin = ROOT / ".peers" / "bin"
    if not (peers_bin / "mcp-server-git").exists():
        raise SystemExit(".peers is not installed: run ./run-tests once (bin/_peers.sh creates it)")
    os.environ.setdefault("ASIXTO_STDIO_USER", "")  # the repository below is ours
    setup()
    from django.db import connection
    from django_tenants.utils import tenant_context

    from tenants.models import ApprovedCommand
    from tenants.services import tenant_create
    from tools.sync import catalog_sync
    from tools.servers import server_create

    repository = tempfile.mkdtemp(prefix="asixto-bench-git-")
    subprocess.run(["git", "init", "-q", repository], check=True)
    tenant = tenant_create(slug="bench-peers", name="Bench Peers").tenant
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'server':8} {'tools':>5} {'first sync':>11} {'re-sync':>9} {'direct list':>12} {'ratio':>6}")
    for slug, (program, *rest) in PEERS.items():
        argv = [str(peers_bin / program), *(arg.format(repository=repository) for arg in rest)]
        connection.set_schema_to_public()
        ApprovedCommand.objects.create(slug=slug, executable=argv[0], base_args=argv[1:])
        with tenant_context(tenant):
            server = server_create(data={"slug": slug, "transport": "stdio", "command": slug, "timeout_seconds": 30})
            started = time.perf_counter()
            version = catalog_sync(server=server)
            first = time.perf_counter() - started
            again = []
            for _ in range(args.runs):
                started = time.perf_counter()
                catalog_sync(server=server)
                again.append(time.perf_counter() - started)
        direct = statistics.median(direct_listing_seconds(argv) for _ in range(args.runs))
        resync = statistics.median(again)
        print(f"{slug:8} {version.tool_count:>5} {first:>10.2f}s {resync:>8.2f}s {direct:>11.2f}s {resync / direct:>6.2f}")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    sys.exit(main())
