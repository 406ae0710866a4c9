"""A warm tool call to a stdio MCP server through the gateway against the MCP SDK's own client
(issue 22: goal ≤ 1.5×).

    python bench/stdio_overhead.py [--pairs 400] [--warm-up 50] [--with-flush] [--writer-in-background] [--profile]

Two children of the same command (the example server, examples/soporte, speaking stdio) run
side by side, each with a live, negotiated session (the cached server/discover result, as the
gateway uses it):

- `SDK client`: `mcp.ClientSession` over the SDK's `stdio_client`, owned by a plain asyncio
  event loop driven by the calling thread itself (`loop.run_until_complete`). A call is timed
  around `await session.call_tool(...)` inside that loop: no thread hands anything to another,
  and the SDK parses the answer into its `CallToolResult`. That is the fastest way a Python
  program can call a stdio MCP server with the SDK, so the ratio is the gateway's whole cost.
- `gateway`: `tools.gateway.call_tool`, the function the turn and the test console call, from
  the calling thread as a Celery worker or a web thread does (it is synchronous), on the
  server's live session in the process's stdio pool (tools/mcp/stdio_pool.py). It includes the
  tool lookup, the exposure policy, argument validation, `_meta`, the journal line, output
  validation, the sanitiser and handing the call record to the record writer, and the launch
  checks a stdio call makes (the operator's approval, the launch spec, the tenant's isolation:
  its own child, under the supervisor).
- `gateway + record stored` (`--with-flush`): the same call, then `flush_records()`, as the end
  of a turn with one call waits for its record.

The variants alternate call by call (A B, B A, A B, …: each pair's order flips, so neither
always runs right after the other), one call at a time, in one run, on one process. Each call
is timed alone; the medians and 90th percentiles of each, the ratios of those, and the median
of the per-pair ratios are printed with the CPU this process spent per call (all threads: the
record writer and the stdio pool's housekeeper are threads of it) and the load average before
and after. After each gateway call its record is stored (`flush_records()`, untimed, though its
CPU is counted in the gateway's), so the record writer's work never falls on the SDK's calls;
what waiting for it costs is the third variant's. With
`--writer-in-background` the records are not flushed: the writer stores them in batches
meanwhile, as in a busy worker, and its work falls on whichever calls run then, of both variants.

`--profile` runs more gateway calls under cProfile afterwards and prints the top of it
(BENCH_SORT=tottime for own time; BENCH_PROFILE_FILE=path also saves the statistics). cProfile
sees only the calling thread, which runs the session's loop itself on a warm call (the time in
`epoll.poll` is the wait for the child's answer); the flush after each call is profiled too.

Not covered: starting a child and its first negotiation (timed once and printed, not compared),
concurrent calls (one caller; the pool runs several calls on one session at once), many tenants
or servers (one session; the pool keeps up to ASIXTO_STDIO_MAX_SESSIONS), large answers or deep
schemas (the example tool's are small), retries, timeouts and crashes, the model and the turn
around a call (bench/turn_overhead.py), HTTP servers (bench/gateway_overhead.py), and servers
run as a user of their own with the fence (the bench keeps its own user, as the tests do)."""

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid

from _django import ROOT, setup

GOAL = 1.5
# The example server as a stdio program, runnable from any working directory.
STDIO_CODE = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from examples.soporte.__main__ import main; main(['--stdio'])"
TOOL, ARGUMENTS = "buscar_producto", {"consulta": "router"}


def load_average() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class SdkClient:
    """A live SDK session to a child of its own, on an event loop this thread drives."""

    def __init__(self, discover: dict):
        self.loop = asyncio.new_event_loop()
        self.session = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._owner = self.loop.create_task(self._own(discover))
        self.loop.run_until_complete(asyncio.wait_for(self._ready.wait(), 120))

    async def _own(self, discover: dict):
        import mcp_types as types
        from mcp import StdioServerParameters
        from mcp.client.session import ClientSession
        from mcp.client.stdio import stdio_client

        parameters = StdioServerParameters(command=sys.executable, args=["-c", STDIO_CODE])
        async with stdio_client(parameters) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                session.adopt(types.DiscoverResult.model_validate(discover))
                self.session = session
                self._ready.set()
                await self._stop.wait()

    def call(self, meta: dict) -> float:
        """One call; the seconds its await took."""

        async def timed():
            start = time.perf_counter()
            result = await self.session.call_tool(TOOL, ARGUMENTS, meta=meta)
            took = time.perf_counter() - start
            assert not result.is_error, result
            return took

        return self.loop.run_until_complete(timed())

    def close(self):
        self._stop.set()
        self.loop.run_until_complete(asyncio.wait_for(self._owner, 30))
        self.loop.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=400, help="calls of each variant, alternated")
    parser.add_argument("--warm-up", type=int, default=50, help="untimed calls of each variant first")
    parser.add_argument("--with-flush", action="store_true", help="also the gateway's call with its record stored after it")
    parser.add_argument("--writer-in-background", action="store_true",
                        help="leave the gateway's records to the writer's batches instead of storing each, untimed, after its call")
    parser.add_argument("--profile", action="store_true", help="profile more gateway calls and print where the time went")
    args = parser.parse_args()
    setup()
    from django.db import connection
    from django_tenants.utils import tenant_context

    from tenants.models import ApprovedCommand
    from tenants.services import tenant_create
    from tools.gateway import CallContext, call_tool, flush_records
    from tools.gateway.call import build_meta
    from tools.mcp import stdio_pool
    from tools.models import McpServer, ToolCall
    from tools.services import catalog_sync, server_create

    ApprovedCommand.objects.create(slug="soporte-stdio", executable=sys.executable, base_args=["-c", STDIO_CODE])
    tenant = tenant_create(slug="bench-stdio", name="Bench").tenant
    with tenant_context(tenant):
        catalog_sync(server=server_create(data={"slug": "soporte", "transport": "stdio", "command": "soporte-stdio",
                                                "timeout_seconds": 30.0}))
        discover = McpServer.objects.get(slug="soporte").discover_result
    connection.set_schema_to_public()
    context = CallContext(channel="chat", idempotency_key="bench", conversation_id="bench")
    meta = build_meta(context, f"req_{uuid.uuid4().hex[:20]}", "bench")
    sdk = SdkClient(discover)

    def gateway() -> float:
        with tenant_context(tenant):
            start = time.perf_counter()
            outcome = call_tool(name=f"soporte__{TOOL}", arguments=ARGUMENTS, context=context)
            took = time.perf_counter() - start
        assert outcome.ok, outcome
        if not args.writer_in_background:
            flush_records()  # untimed: the writer's work must not fall on the next (SDK) call
        return took

    def gateway_flushed() -> float:
        with tenant_context(tenant):
            start = time.perf_counter()
            outcome = call_tool(name=f"soporte__{TOOL}", arguments=ARGUMENTS, context=context)
            flush_records()
            took = time.perf_counter() - start
        assert outcome.ok, outcome
        return took

    variants = {"SDK client (plain asyncio)": lambda: sdk.call(meta), "gateway (live session)": gateway}
    if args.with_flush:
        variants["gateway + record stored"] = gateway_flushed
    try:
        start = time.perf_counter()
        gateway()  # starts the gateway's child
        first_ms = (time.perf_counter() - start) * 1000
        for run in variants.values():
            for _ in range(args.warm_up):
                run()
        flush_records()
        samples = {name: [] for name in variants}
        cpu = dict.fromkeys(variants, 0.0)
        names = list(variants)
        load_before = load_average()
        for index in range(args.pairs):
            for name in names if index % 2 == 0 else names[::-1]:
                start_cpu = time.process_time()
                samples[name].append(variants[name]())
                cpu[name] += time.process_time() - start_cpu
        load_after = load_average()
        flush_records()
        if args.profile:
            profile(lambda: [gateway() for _ in range(args.pairs)])
            flush_records()
        (_owner, pid), = stdio_pool.pool().live()
        with tenant_context(tenant):
            stored = ToolCall.objects.count()
    finally:
        sdk.close()
        stdio_pool.shutdown()
    print(f"{args.pairs} calls of each variant, alternated call by call; the gateway's all on child {pid}; "
          f"{stored} call records stored")
    print(f"load average before: {load_before}; after: {load_after} ({os.cpu_count()} CPUs)")
    print(f"first gateway call (starts the child; discover cached): {first_ms:.1f} ms")
    base_name = names[0]
    base = samples[base_name]
    width = max(len(name) for name in names)
    print(f"{'':{width}}  {'median ms':>9} {'p90 ms':>7}  {'×median':>7} {'×p90':>5} {'×pairs':>6}  CPU ms/call")
    for name in names:
        mine = samples[name]
        pairs = statistics.median(m / b for m, b in zip(mine, base, strict=True))
        print(f"{name:{width}}  {statistics.median(mine) * 1000:>9.3f} {percentile(mine, 0.9) * 1000:>7.3f}  "
              f"{statistics.median(mine) / statistics.median(base):>7.2f} {percentile(mine, 0.9) / percentile(base, 0.9):>5.2f} "
              f"{pairs:>6.2f}  {cpu[name] / args.pairs * 1000:.3f}")
    print(f"×median, ×p90: against the SDK client's; ×pairs: median over pairs of each call over the SDK call "
          f"next to it (goal ≤ {GOAL})")


def profile(run):
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    run()
    profiler.disable()
    if os.environ.get("BENCH_PROFILE_FILE"):
        profiler.dump_stats(os.environ["BENCH_PROFILE_FILE"])
    pstats.Stats(profiler).sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(40)


if __name__ == "__main__":
    main()
