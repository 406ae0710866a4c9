"""P1: a tool call through the gateway against a bare HTTP POST of the same JSON-RPC body.

    python bench/gateway_overhead.py [--blocks 40] [--block-size 25] [--tenants 1] [--bare transport] [--profile]
    python bench/gateway_overhead.py --stdio [--blocks 40] [--block-size 25]

`--profile` prints where one more block's time went (BENCH_SORT=tottime to sort by own time;
BENCH_PROFILE_FILE=path also saves the statistics).

The example MCP server (examples/soporte) runs in its own process on loopback. "Bare" is an
httpx POST of the exact body the gateway sends (same headers, keep-alive client); with
`--bare transport` the request goes straight to httpx's transport, as the gateway's own does
(without `httpx.Client`'s cookie, redirect and auth layer, which the gateway has no use for):
the stricter baseline. "Gateway" is
`call_tool`: tool lookup, policy, argument validation, `_meta`, the POST, output validation,
sanitising and the call record in PostgreSQL.

The record is written by a thread of the same process, so its CPU competes with the calls:
timing single calls would leave it out. Both are therefore timed in blocks of `--block-size`
calls, the gateway's block ending with `flush_records()` (every record of the block stored),
and a block's time is divided by its calls. Blocks alternate (bare, gateway, bare, …) so both
run under the same conditions; the medians of the per-call times are printed, and the ratio
is the median of each gateway block over the bare block just before it (on a shared machine
the load changes from one second to the next; adjacent blocks see the same load).

`--tenants N` spreads the gateway's calls over N tenants (round robin, each with the example
server registered and certified), as a worker serving many companies does: per-tenant caches
and the records of many schemas are then part of the cost. A worker's first call for a tenant
also loads that tenant's tool from the database (later calls find it in the lookup cache until
the catalog changes): those first calls are timed apart, and the warm-up reaches every tenant
so that the blocks measure the steady state in both modes.

`--stdio` (issue 8) compares warm calls to the same example server run as a stdio child: the
gateway's call (its live session in this process, tools/mcp/stdio_pool.py) against a direct SDK
call (`ClientSession.call_tool`) over a live session of the SDK's own `stdio_client` to a second
child of the same command, negotiated the same way (the cached server/discover result), driven
from this thread through an event loop in another, as the pool does. Goal ≤ 1.5×."""

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
STDIO_GOAL = 1.5


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


def per_call_ms(bare, gateway, flush, *, blocks, block_size, warm_up):
    """Median per-call time of each, over alternating blocks; the gateway's blocks include the
    flush of their records."""
    for _ in range(warm_up):  # connections, validators, caches
        bare(), gateway()
    flush()
    samples, cpu, caller_cpu = ([], []), [0.0, 0.0], [0.0, 0.0]
    for _ in range(blocks):
        for side, run, end in ((0, bare, None), (1, gateway, flush)):
            start, start_cpu, start_thread = time.perf_counter(), time.process_time(), time.thread_time()
            for _ in range(block_size):
                run()
            if end is not None:
                end()
            samples[side].append((time.perf_counter() - start) / block_size)
            cpu[side] += time.process_time() - start_cpu
            caller_cpu[side] += time.thread_time() - start_thread
    ratio = statistics.median(gateway / bare for bare, gateway in zip(*samples, strict=True))
    calls = blocks * block_size
    cpu_ms = [total / calls * 1000 for total in cpu] + [total / calls * 1000 for total in caller_cpu]
    return statistics.median(samples[0]) * 1000, statistics.median(samples[1]) * 1000, ratio, cpu_ms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--block-size", type=int, default=25)
    parser.add_argument("--tenants", type=int, default=1)
    parser.add_argument("--bare", choices=("client", "transport"), default="client",
                        help="the bare POST through httpx.Client (default) or straight to httpx's transport, as the "
                             "gateway sends (no cookie, redirect or auth layer): the stricter baseline")
    parser.add_argument("--profile", action="store_true", help="profile one more gateway block and print where the time went")
    parser.add_argument("--stdio", action="store_true", help="the example server as a stdio child (live sessions)")
    args = parser.parse_args()
    if args.stdio:
        return stdio_main(args)
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

        transport = httpx.HTTPTransport()

        def bare():
            if args.bare == "client":
                response = client.post(url, content=body, headers=headers)
            else:
                response = transport.handle_request(httpx.Request("POST", url, content=body, headers=headers))
                response.read()
                response.close()
            assert response.status_code == 200

        turn = [0]

        def through_gateway():
            tenant = tenants[turn[0] % len(tenants)]
            turn[0] += 1
            with tenant_context(tenant):
                outcome = call_tool(name="soporte__buscar_producto", arguments=arguments, context=context)
            assert outcome.ok, outcome

        first_calls = []
        for _ in tenants:  # each tenant's first call: its tool comes from the database
            start = time.perf_counter()
            through_gateway()
            first_calls.append(time.perf_counter() - start)
        flush_records()
        warm_up = max(2 * args.block_size, 2 * len(tenants))
        bare_ms, gateway_ms, ratio, cpu_ms = per_call_ms(
            bare, through_gateway, flush_records, blocks=args.blocks, block_size=args.block_size, warm_up=warm_up
        )
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.block_size * 4):
                through_gateway()
            flush_records()
            profiler.disable()
            if os.environ.get("BENCH_PROFILE_FILE"):  # for pstats or snakeviz
                profiler.dump_stats(os.environ["BENCH_PROFILE_FILE"])
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
    made = args.blocks * args.block_size + warm_up + len(tenants) + (4 * args.block_size if args.profile else 0)
    where = f"over {args.tenants} tenants" if args.tenants > 1 else "one tenant"
    print(f"{args.blocks} blocks of {args.block_size} calls, {where}; {stored} call records stored of {made} calls made")
    print(f"first call for a tenant (tool loaded from the database), median: {statistics.median(first_calls) * 1000:.2f} ms")
    print(f"bare httpx POST ({args.bare}), median per call:         {bare_ms:.2f} ms")
    print(f"through the gateway (records flushed), per call:   {gateway_ms:.2f} ms")
    print(f"CPU of this process per call (all threads, the record writer's included): "
          f"bare {cpu_ms[0]:.2f} ms, gateway {cpu_ms[1]:.2f} ms")
    print(f"  of which the calling thread's: bare {cpu_ms[2]:.2f} ms, gateway {cpu_ms[3]:.2f} ms "
          f"(the rest is the record writer's)")
    print(f"ratio gateway/bare (median of adjacent blocks): {ratio:.2f}  (goal ≤ {GOAL})")


# The example server as a stdio program, runnable from any working directory.
STDIO_CODE = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from examples.soporte.__main__ import main; main(['--stdio'])"


class DirectStdioSession:
    """A live SDK session (the SDK's own `stdio_client`) owned by an event loop in a thread of
    its own; `call` runs `ClientSession.call_tool` on it from the calling thread."""

    def __init__(self, discover):
        import asyncio
        import threading

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ready, self.stop = threading.Event(), None
        self.session = None
        asyncio.run_coroutine_threadsafe(self._own(discover), self.loop)
        if not self.ready.wait(120):
            raise SystemExit("the direct stdio session did not start")

    async def _own(self, discover):
        import anyio
        import mcp_types as types
        from mcp import StdioServerParameters
        from mcp.client.session import ClientSession
        from mcp.client.stdio import stdio_client

        self.stop = anyio.Event()
        parameters = StdioServerParameters(command=sys.executable, args=["-c", STDIO_CODE])
        async with stdio_client(parameters) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                session.adopt(types.DiscoverResult.model_validate(discover))
                self.session = session
                self.ready.set()
                await self.stop.wait()

    def call(self, name, arguments, meta):
        import asyncio

        coroutine = self.session.call_tool(name, arguments, meta=meta)
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(60)

    def close(self):
        self.loop.call_soon_threadsafe(self.stop.set)


def stdio_main(args):
    os.environ.setdefault("ASIXTO_STDIO_USER", "")  # the venv's interpreter may be unreadable to another user
    setup("asixto_bench_gateway_overhead_stdio")  # beside a run of the HTTP mode
    from django.db import connection
    from django_tenants.utils import tenant_context

    from tenants.models import ApprovedCommand
    from tenants.services import tenant_create
    from tools.gateway import CallContext, call_tool, flush_records
    from tools.gateway.call import build_meta
    from tools.mcp import stdio_pool
    from tools.models import McpServer
    from tools.services import catalog_sync, server_create

    ApprovedCommand.objects.create(slug="soporte-stdio", executable=sys.executable, base_args=["-c", STDIO_CODE])
    tenant = tenant_create(slug="bench-gateway-stdio", name="Bench").tenant
    with tenant_context(tenant):
        catalog_sync(server=server_create(data={"slug": "soporte", "transport": "stdio", "command": "soporte-stdio",
                                                "timeout_seconds": 30.0}))
        discover = McpServer.objects.get(slug="soporte").discover_result
    connection.set_schema_to_public()
    arguments = {"consulta": "router"}
    context = CallContext(channel="chat", idempotency_key="bench", conversation_id="bench")
    meta = build_meta(context, f"req_{uuid.uuid4().hex[:20]}", "bench")
    direct = DirectStdioSession(discover)

    def bare():
        result = direct.call("buscar_producto", arguments, meta)
        assert not result.is_error, result

    def through_gateway():
        with tenant_context(tenant):
            outcome = call_tool(name="soporte__buscar_producto", arguments=arguments, context=context)
        assert outcome.ok, outcome

    start = time.perf_counter()
    through_gateway()  # starts the gateway's live session
    first_ms = (time.perf_counter() - start) * 1000
    try:
        bare_ms, gateway_ms, ratio, cpu_ms = per_call_ms(
            bare, through_gateway, flush_records, blocks=args.blocks, block_size=args.block_size, warm_up=2 * args.block_size
        )
        (owner, pid), = stdio_pool.pool().live()
    finally:
        direct.close()
        stdio_pool.shutdown()
    print(f"{args.blocks} blocks of {args.block_size} calls, one tenant; the gateway's calls all on child {pid}")
    print(f"first gateway call (starts the child, no negotiation: discover cached): {first_ms:.1f} ms")
    print(f"direct SDK call over a live stdio session, median per call: {bare_ms:.2f} ms")
    print(f"through the gateway (live session, records flushed), per call: {gateway_ms:.2f} ms")
    print(f"CPU of this process per call (all threads): direct {cpu_ms[0]:.2f} ms, gateway {cpu_ms[1]:.2f} ms")
    print(f"ratio gateway/direct (median of adjacent blocks): {ratio:.2f}  (goal ≤ {STDIO_GOAL})")
    print(f"load average: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
