"""P1: a tool call through the gateway against a bare HTTP POST of the same JSON-RPC body.

    python bench/gateway_overhead.py [--blocks 20] [--block-size 25] [--tenants 1] [--profile]

The example MCP server (examples/soporte) runs in its own process on loopback. "Bare" is an
httpx POST of the exact body the gateway sends (same headers, keep-alive client). "Gateway" is
`call_tool`: tool lookup, policy, argument validation, `_meta`, the POST, output validation,
sanitising and the call record in PostgreSQL.

The record is written by a thread of the same process, so its CPU competes with the calls:
timing single calls would leave it out. Both are therefore timed in blocks of `--block-size`
calls, the gateway's block ending with `flush_records()` (every record of the block stored),
and a block's time is divided by its calls. Blocks alternate (bare, gateway, bare, …) so both
run under the same conditions; the medians of the per-call times and their ratio are printed.

`--tenants N` spreads the gateway's calls over N tenants (round robin, each with the example
server registered and certified), as a worker serving many companies does: per-tenant caches
and the records of many schemas are then part of the cost."""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid

from _django import ROOT, setup

GOAL = 1.25


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(port, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the example server did not start")


def per_call_ms(bare, gateway, flush, *, blocks, block_size):
    """Median per-call time of each, over alternating blocks; the gateway's blocks include the
    flush of their records."""
    for _ in range(2 * block_size):  # warm-up: connections, validators, caches
        bare(), gateway()
    flush()
    samples = ([], [])
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(block_size):
            bare()
        samples[0].append((time.perf_counter() - start) / block_size)
        start = time.perf_counter()
        for _ in range(block_size):
            gateway()
        flush()
        samples[1].append((time.perf_counter() - start) / block_size)
    return statistics.median(samples[0]) * 1000, statistics.median(samples[1]) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--block-size", type=int, default=25)
    parser.add_argument("--tenants", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="profile one more gateway block and print where the time went")
    args = parser.parse_args()
    os.environ["ASIXTO_ALLOW_PRIVATE_HOSTS"] = "1"
    setup()
    import httpx
    from django.db import connection
    from django_tenants.utils import tenant_context

    from tenants.services import tenant_create
    from tools.gateway import CallContext, call_tool, flush_records
    from tools.gateway import http as gateway_http
    from tools.gateway.call import build_meta
    from tools.models import ToolCall
    from tools.services import catalog_sync, server_create

    port = free_port()
    server_process = subprocess.Popen(
        [sys.executable, "-m", "examples.soporte", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(port)
        url = f"http://127.0.0.1:{port}/mcp"
        tenants = []
        for index in range(args.tenants):
            tenant = tenant_create(slug=f"bench-gateway-{index:03d}", name="Bench").tenant
            with tenant_context(tenant):
                catalog_sync(server=server_create(data={"slug": "soporte", "transport": "streamable_http", "url": url}))
            tenants.append(tenant)
            if (index + 1) % 50 == 0:
                print(f"  … {index + 1} tenants", flush=True)
        connection.set_schema_to_public()
        arguments = {"consulta": "router"}
        context = CallContext(channel="chat", idempotency_key="bench", conversation_id="bench")
        client = httpx.Client()
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "buscar_producto"}
        body = gateway_http.build_body(1, "buscar_producto", arguments, build_meta(context, f"req_{uuid.uuid4().hex[:20]}", "bench"))

        def bare():
            response = client.post(url, content=body, headers=headers)
            assert response.status_code == 200

        turn = [0]

        def through_gateway():
            tenant = tenants[turn[0] % len(tenants)]
            turn[0] += 1
            with tenant_context(tenant):
                outcome = call_tool(name="soporte__buscar_producto", arguments=arguments, context=context)
            assert outcome.ok, outcome

        bare_ms, gateway_ms = per_call_ms(bare, through_gateway, flush_records, blocks=args.blocks, block_size=args.block_size)
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.block_size * 4):
                through_gateway()
            flush_records()
            profiler.disable()
            pstats.Stats(profiler).sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(45)
        flush_records()
        stored = 0
        for tenant in tenants:
            with tenant_context(tenant):
                stored += ToolCall.objects.count()
        connection.set_schema_to_public()
    finally:
        server_process.terminate()
        server_process.wait(5)
    calls = args.blocks * args.block_size
    where = f"over {args.tenants} tenants" if args.tenants > 1 else "one tenant"
    print(f"{args.blocks} blocks of {args.block_size} calls, {where}; {stored} call records stored "
          f"(of {calls + 2 * args.block_size} made, warm-up included)")
    print(f"bare httpx POST, median per call:                  {bare_ms:.2f} ms")
    print(f"through the gateway (records flushed), per call:   {gateway_ms:.2f} ms")
    print(f"ratio gateway/bare: {gateway_ms / bare_ms:.2f}  (goal ≤ {GOAL})")


if __name__ == "__main__":
    main()
