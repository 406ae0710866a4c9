"""P1: a tool call through the gateway against a bare POST of the same JSON-RPC body.

    python bench/gateway_overhead.py [--blocks 40] [--block-size 25] [--tenants 1] [--record-per-call] [--profile]

`--profile` prints where one more block's time went (BENCH_SORT=tottime to sort by own time;
BENCH_PROFILE_FILE=path also saves the statistics).

The example MCP server (examples/soporte) runs in its own process on loopback. "Bare" is a POST
of the exact body and headers the gateway sends, through the gateway's own transport
(tools/gateway/http.py: the same checked, pooled keep-alive connections, no httpx.Client
layer), its answer read whole: what the gateway cannot do without. "Gateway" is `call_tool`:
tool lookup, policy, argument validation, `_meta`, the POST, output validation, sanitising and
the call record in PostgreSQL.

The record is written by a thread of the same process, so its CPU competes with the calls:
timing single calls would leave it out. Each variant is therefore timed in blocks of
`--block-size` calls that end with every record of the block stored, and a block's time is
divided by its calls. Variants:

- `gateway`: the block's records are stored together at its end (`flush_records()` once per
  block): a worker making many calls, its writer batching them.
- `gateway, record per call` (`--record-per-call`): `flush_records()` after every call, so each
  record is written in a transaction of its own, and the call waits for it — a turn's cost at
  most (a turn stores its records before the reply, usually one or two calls per turn).
- `console call (record at once)` (with `--record-per-call`): a call of the test console
  (`POST …/invoke`, the dashboard's), whose record is stored by the caller before `call_tool`
  returns.

Rounds run one block of each variant, the order rotated from round to round (bare, gateway, …;
gateway, …, bare; …) so that all run under the same conditions; the medians of the per-call
times are printed, and each ratio is the median over rounds of the variant's block over the bare
block of the same round (on a shared machine the load changes from one second to the next;
blocks of one round see the same load). The load average is printed before and after.

`--approved-host` reaches the server as a tenant's server on a private network is reached in
production: through an operator's approval of its address (for every tenant), with
ASIXTO_ALLOW_PRIVATE_HOSTS off, so each call's outbound check needs the approvals.

`--tenants N` spreads the gateway's calls over N tenants (round robin, each with the example
server registered and certified), as a worker serving many companies does: per-tenant caches
and the records of many schemas are then part of the cost. A worker's first call for a tenant
also loads that tenant's tool from the database (later calls find it in the lookup cache until
the catalog changes): those first calls are timed apart, and the warm-up reaches every tenant
so that the blocks measure the steady state. With N > 1 the same rounds also run the gateway
(and, with `--record-per-call`, the record per call) on the first tenant alone: what switching
tenants costs is the difference between the two lines, under the same conditions.

PostgreSQL's CPU per call is printed beside this process's: that of the backends serving the
bench's database (read from /proc between blocks, clock ticks of 10 ms summed over the rounds),
where the records of many schemas cost most. The example server's CPU is not counted.

A stdio server's warm call against the SDK's own client: bench/stdio_overhead.py (issue 22).

Not covered: a first connection (TCP, TLS; loopback plain HTTP only, kept alive), name lookups
of a real host name (the URL is a literal address), retries, timeouts and failures, large
results or deep schemas (the example tool's are small), the SDK's HTTP transports (legacy SSE,
servers without a cached discover result), concurrent callers in one process (one calling
thread), the Celery task and the model around a call (bench/turn_overhead.py), the HTTP API
(bench/api_invoke.py), and a PostgreSQL on another machine (loopback round trips)."""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Callable

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


def load_average() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


@dataclass
class Variant:
    name: str
    block: Callable[[int], None]  # makes that many calls, then stores their records


@dataclass
class Figures:
    ms: float  # median per-call time
    ratio: float  # median over rounds of this variant's block over the baseline's
    cpu_ms: float  # this process's CPU per call, all threads
    caller_cpu_ms: float  # of which the calling thread's
    database_cpu_ms: float | None = None  # the PostgreSQL backends' of the bench's database


def database_cpu(database: str) -> Callable[[], float]:
    """The CPU seconds so far of the PostgreSQL backends serving `database` on this machine (from
    /proc: the writer's and the callers' sessions, which the pool keeps open)."""
    title = f" {database} ".encode()
    tick = os.sysconf("SC_CLK_TCK")

    def seconds():
        total = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    command = handle.read()
                if not command.startswith(b"postgres: ") or title not in command:
                    continue
                with open(f"/proc/{pid}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[-1].split()
            except OSError:  # gone meanwhile
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
        return total / tick

    return seconds


def compare(variants: list[Variant], *, blocks: int, block_size: int, warm_up: int,
            database_seconds: Callable[[], float] | None = None) -> dict[str, Figures]:
    """Per-call figures of each variant over `blocks` rounds, each round one block of every
    variant in an order rotated round by round; ratios against the first variant (the baseline).
    `database_seconds`: the database's CPU so far, read outside the timed blocks."""
    for variant in variants:  # connections, validators, caches
        variant.block(warm_up)
    times = {variant.name: [] for variant in variants}
    cpu = {variant.name: [0.0, 0.0, 0.0] for variant in variants}
    for round_number in range(blocks):
        shift = round_number % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            start_database = database_seconds() if database_seconds else 0.0
            start, start_cpu, start_thread = time.perf_counter(), time.process_time(), time.thread_time()
            variant.block(block_size)
            times[variant.name].append(time.perf_counter() - start)
            cpu[variant.name][0] += time.process_time() - start_cpu
            cpu[variant.name][1] += time.thread_time() - start_thread
            if database_seconds:
                cpu[variant.name][2] += database_seconds() - start_database
    baseline = times[variants[0].name]
    calls = blocks * block_size
    return {
        name: Figures(
            ms=statistics.median(samples) / block_size * 1000,
            ratio=statistics.median(mine / base for mine, base in zip(samples, baseline, strict=True)),
            cpu_ms=cpu[name][0] / calls * 1000, caller_cpu_ms=cpu[name][1] / calls * 1000,
            database_cpu_ms=cpu[name][2] / calls * 1000 if database_seconds else None,
        )
        for name, samples in times.items()
    }


def blocks_of(call, flush):
    """Block runners of `call`: (calls, then one flush; a flush after every call)."""

    def together(calls):
        for _ in range(calls):
            call()
        flush()

    def each(calls):
        for _ in range(calls):
            call()
            flush()

    return together, each


def print_figures(figures: dict[str, Figures], goal: float):
    width = max(len(name) for name in figures)
    database = all(figure.database_cpu_ms is not None for figure in figures.values())
    print(f"{'':{width}}  {'ms/call':>8} {'ratio':>6}  {'CPU ms/call (all threads; calling thread)':>40}"
          + ("  PostgreSQL CPU ms/call" if database else ""))
    for name, figure in figures.items():
        print(f"{name:{width}}  {figure.ms:>8.3f} {figure.ratio:>6.2f}  {figure.cpu_ms:>21.3f}; {figure.caller_cpu_ms:<17.3f}"
              + (f"  {figure.database_cpu_ms:.3f}" if database else ""))
    print(f"ratios: median over rounds of each block over the baseline's block of the same round (goal ≤ {goal})")


def bare_post(url: str, arguments: dict, context) -> Callable[[], None]:
    """A POST of the exact body and headers the gateway sends for `soporte__buscar_producto`,
    through the gateway's own transport, its answer read whole."""
    import httpx

    from tools.gateway import http as gateway_http
    from tools.gateway.call import build_meta
    from tools.mcp.meta import PROTOCOL_VERSION

    # The request the gateway sends (tools/gateway/http.py: httpx's default headers, then its own).
    own = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "Accept-Encoding": "identity", "MCP-Protocol-Version": PROTOCOL_VERSION, "Mcp-Method": "tools/call",
           "Mcp-Name": "buscar_producto"}
    named = {key.lower() for key in own}
    headers = [*((key, value) for key, value in gateway_http._CLIENT_HEADERS if key.lower() not in named), *own.items()]
    body = gateway_http.build_body(1, "buscar_producto", arguments, build_meta(context, f"req_{uuid.uuid4().hex[:20]}", "bench"))
    target = httpx.URL(url)

    def bare():
        timeouts = {"connect": 5.0, "read": 30.0, "write": 30.0, "pool": 30.0}
        request = httpx.Request("POST", target, content=body, headers=headers, extensions={"timeout": timeouts})
        response = gateway_http._transport.handle_request(request)
        try:
            response.read()
        finally:
            response.close()
        assert response.status_code == 200

    return bare


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=40, help="rounds (one block of each variant per round)")
    parser.add_argument("--block-size", type=int, default=25)
    parser.add_argument("--tenants", type=int, default=1)
    parser.add_argument("--record-per-call", action="store_true",
                        help="also the gateway with each call's record stored before the next call (as /invoke does)")
    parser.add_argument("--profile", action="store_true", help="profile one more gateway block and print where the time went")
    parser.add_argument("--approved-host", action="store_true",
                        help="reach the loopback server through an operator's approval of 127.0.0.1 instead of ASIXTO_ALLOW_PRIVATE_HOSTS")
    args = parser.parse_args()
    os.environ["ASIXTO_ALLOW_PRIVATE_HOSTS"] = "" if args.approved_host else "1"
    setup()
    from django.db import connection
    from django_tenants.utils import tenant_context

    from tenants.services import tenant_create
    from tools.gateway import CallContext, call_tool, flush_records
    from tools.models import ToolCall
    from tools.services import catalog_sync, server_create

    port = free_port()
    if args.approved_host:  # for every tenant, as for a service the platform runs on its private network
        from tenants.models import ApprovedPrivateHost

        ApprovedPrivateHost.objects.create(host="127.0.0.1", allow_http=True, ports=str(port), purposes=["mcp"])
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
        bare = bare_post(url, arguments, context)

        made = [0]

        def next_tenant():  # round robin
            made[0] += 1
            return tenants[(made[0] - 1) % len(tenants)]

        def first_tenant():
            made[0] += 1
            return tenants[0]

        def calling(pick, call_context):
            def call():
                with tenant_context(pick()):
                    outcome = call_tool(name="soporte__buscar_producto", arguments=arguments, context=call_context)
                assert outcome.ok, outcome

            return call

        through_gateway = calling(next_tenant, context)
        gateway_block, record_per_call_block = blocks_of(through_gateway, flush_records)
        one_tenant_block, one_tenant_record_per_call_block = blocks_of(calling(first_tenant, context), flush_records)
        console = CallContext(channel="chat", idempotency_key="bench", conversation_id="bench", source=ToolCall.Source.CONSOLE)
        # its record stored before call_tool returns, as the test console's
        console_call = calling(next_tenant, console)

        first_calls = []
        for _ in tenants:  # each tenant's first call: its tool comes from the database
            start = time.perf_counter()
            through_gateway()
            first_calls.append(time.perf_counter() - start)
        flush_records()
        many = len(tenants) > 1
        variants = [Variant("bare POST (gateway's transport)", blocks_of(bare, lambda: None)[0]),
                    Variant("gateway", gateway_block)]
        if many:
            variants.append(Variant("gateway, first tenant only", one_tenant_block))
        if args.record_per_call:
            variants.append(Variant("gateway, record per call", record_per_call_block))
            if many:
                variants.append(Variant("gateway, record per call, first tenant only", one_tenant_record_per_call_block))
            variants.append(Variant("console call (record at once)", blocks_of(console_call, lambda: None)[0]))
        load_before = load_average()
        figures = compare(variants, blocks=args.blocks, block_size=args.block_size,
                          warm_up=max(2 * args.block_size, 2 * len(tenants)),
                          database_seconds=database_cpu(connection.settings_dict["NAME"]))
        load_after = load_average()
        if args.profile:
            profile(lambda: gateway_block(args.block_size * 4))
        flush_records()
        stored = 0
        for tenant in tenants:
            with tenant_context(tenant):
                stored += ToolCall.objects.count()
        connection.set_schema_to_public()
    finally:
        server_process.terminate()
        server_process.wait(5)
    where = f"round robin over {args.tenants} tenants" if args.tenants > 1 else "one tenant"
    if args.approved_host:
        where += ", the server reached through an approved private host"
    print(f"{args.blocks} rounds of blocks of {args.block_size} calls, {where}; {stored} call records stored of {made[0]} calls made")
    print(f"load average before: {load_before}; after: {load_after} ({os.cpu_count()} CPUs)")
    print(f"first call for a tenant (tool loaded from the database), median: {statistics.median(first_calls) * 1000:.2f} ms")
    print_figures(figures, GOAL)


def profile(run):
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    run()
    profiler.disable()
    if os.environ.get("BENCH_PROFILE_FILE"):  # for pstats or snakeviz
        profiler.dump_stats(os.environ["BENCH_PROFILE_FILE"])
    pstats.Stats(profiler).sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(45)


if __name__ == "__main__":
    main()
