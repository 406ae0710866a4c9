"""Issue 21's goal: metrics and traces cost ≤ 3% of P1 (a tool call through the gateway) and of P3
(the turn loop's own time per iteration). Both are measured with observability off and on, in
one run, variants alternating.

    python bench/observability_cost.py [--rounds 20] [--calls 25] [--turns 3] [--tool-calls 4]
                                       [--variants off,on] [--sample-ratio 0.1] [--profile VARIANT]
    python bench/observability_cost.py --micro

Instrumentation patches libraries process-wide (httpx's transport, Django's middleware) and cannot
be undone cleanly, so each variant is a child process of its own: the same code, started the
same way, whose environment differs only in

- `off`:     ASIXTO_METRICS=0, no OTEL_EXPORTER_OTLP_ENDPOINT (what ships by default);
- `metrics`: ASIXTO_METRICS=1 only;
- `traces`:  OTEL_EXPORTER_OTLP_ENDPOINT only;
- `on`:      both;
- `sampled`: both, and OTEL_TRACES_SAMPLER=parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG
             `--sample-ratio` (0.1): the head sampling an operator may choose (README "Traces");
- `traces-sql`, `sampled-sql`: `traces` and `sampled` with a span for each SQL statement too
             (ASIXTO_TRACE_SQL=1).

Every child has a fresh PROMETHEUS_MULTIPROC_DIR (a temporary directory) and a database of its
own (asixto_bench_observability_cost_<variant>). Traces go to a sink of this process on loopback
(`OtlpSink`) that reads each OTLP/HTTP export, answers 200, then counts its spans and throws them
away; the children install tracing as a web process or worker does (`tracing.setup()`: the SDK's
batch exporter, the Django, Celery and httpx instrumentations, our own spans of the model
client's and the gateway's requests, and with ASIXTO_TRACE_SQL our SQL spans). The stand-in
model (bench/_model_server.py) and the example MCP server (examples/soporte), each a process of
its own, serve all children.

A round runs, in each child in turn (the order reversed every other round): a P1 block — `--calls`
bare POSTs of the gateway's own request (bench/gateway_overhead.py's "bare"), then `--calls` calls
through `call_tool`, their records stored (`flush_records()`), and the spans still batched
exported (`tracing.flush()`) within the block's time — then a P3 block: `--turns` turns run in the
child (bench/turn_overhead.py's `TurnMeter`; a zero-latency model asking for `--tool-calls`
calls), the overhead per loop iteration being what bench/turn_overhead.py counts (the turn's time
without the model's wire time, the gateway+tool and routing) plus the export of the block's spans
at its end. Only one child works at a time; the others wait on their stdin.

Printed: per variant the medians over rounds (ms per call, ms per iteration, CPU of the child per
call and per turn, SQL statements per turn), and each variant's ratio to `off` — the median over
rounds of its block over `off`'s block of the same round, with the quartiles and the extremes of
those per-round ratios (the load of a shared machine changes from one second to the next; blocks
of one round see the same load). The load average is printed before and after. The figures of a run are in README.md
("Sampling, and what metrics and traces cost").

`--micro` prints, in this process alone, the CPU one recording of the metrics takes (a gateway
call's, a model request's, a turn's start and end), what our tool call, HTTP request and SQL
statement hooks cost when the sampler leaves their trace out, and what their spans cost when
kept, up to the export: microseconds, which the rounds above cannot resolve
on a shared machine, to set against the off child's CPU per call and per turn.

`--profile VARIANT[,VARIANT…]` ends with a cProfile (CPU time of the calling thread) of one more
P1 and P3 block in those children, printed by each child (BENCH_SORT=cumulative to sort by
cumulative time; tottime by default; BENCH_PROFILE_FILE=path also saves path.VARIANT).

Not covered: the web process (the Django instrumentation's request span; bench/api_invoke.py's
path), a Celery task's span (turns run in the child here, as a worker thread runs them), a
collector on another machine (the sink is on loopback and answers at once), the scrape of
`/metrics` (read at scrape time, not per call), the call records' writer thread (its statements
are outside any trace: no SQL span).

Absolute figures swing with what else the machine runs (on the shared 2-CPU development machine
bench/turn_overhead.py alone gave a median turn of 31 ms, and 288 ms twenty minutes later, its
CPU per iteration 3 ms and then 29 ms); the ratios between the children of one round, which see
the same load, are what this bench is for.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

os.environ.setdefault("ASIXTO_ALLOW_PRIVATE_HOSTS", "1")  # the stand-ins are on loopback (M2)

from _django import ROOT, bench_database, setup  # noqa: E402
from _turns import example_server, free_port, model_server  # noqa: E402

GOAL = 1.03
VARIANTS = {
    "off": {"ASIXTO_METRICS": "0"},
    "metrics": {"ASIXTO_METRICS": "1"},
    "traces": {"ASIXTO_METRICS": "0", "OTEL_EXPORTER_OTLP_ENDPOINT": "{sink}"},
    "on": {"ASIXTO_METRICS": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": "{sink}"},
    # Both, with the head sampling an operator sets through the SDK's own variables.
    "sampled": {"ASIXTO_METRICS": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": "{sink}",
                "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "{ratio}"},
    # Traces with a span for each SQL statement too (ASIXTO_TRACE_SQL=1).
    "traces-sql": {"ASIXTO_METRICS": "0", "OTEL_EXPORTER_OTLP_ENDPOINT": "{sink}", "ASIXTO_TRACE_SQL": "1"},
    "sampled-sql": {"ASIXTO_METRICS": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": "{sink}", "ASIXTO_TRACE_SQL": "1",
                    "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "{ratio}"},
}
# Settings of the parent's environment that would change a child's observability.
CLEARED_PREFIXES = ("OTEL_", "ASIXTO_METRICS", "ASIXTO_TRACE_SQL", "PROMETHEUS_MULTIPROC_DIR", "ASIXTO_BENCH_DATABASE")
REPLY = "BENCH "  # a child's answers start with this; anything else it prints is not read


def load_average() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


# ---------------------------------------------------------------- the parent: sink, children, rounds

class OtlpSink:
    """An OTLP/HTTP trace receiver on loopback that answers each export with 200 and discards it,
    after counting its spans by name (the proof that the traced children did trace)."""

    def __init__(self):
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        spans, lock = Counter(), threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()
                if self.path == "/v1/traces":  # counted after the answer: the exporter does not wait for it
                    names = Counter(span.name for resource in ExportTraceServiceRequest.FromString(body).resource_spans
                                    for scope in resource.scope_spans for span in scope.spans)
                    with lock:
                        spans.update(names)

            def log_message(self, *args):
                pass

        self.spans = spans
        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Child:
    """One variant's process: started with its environment, then asked for blocks one at a time."""

    def __init__(self, name: str, *, sink: str, ratio: float, model_url: str, mcp_url: str, tool_calls: int):
        self.name = name
        self.metrics_dir = tempfile.mkdtemp(prefix=f"asixto-bench-metrics-{name}-")
        env = {key: value for key, value in os.environ.items() if not key.startswith(CLEARED_PREFIXES)}
        env.update({key: value.format(sink=sink, ratio=ratio) for key, value in VARIANTS[name].items()})
        env["PROMETHEUS_MULTIPROC_DIR"] = self.metrics_dir
        args = [sys.executable, "bench/observability_cost.py", "--child", name, "--model-url", model_url,
                "--mcp-url", mcp_url, "--tool-calls", str(tool_calls)]
        self.process = subprocess.Popen(args, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, command: str) -> dict:
        if command:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith(REPLY):
                return json.loads(line[len(REPLY):])
        raise SystemExit(f"the {self.name} child ended (exit status {self.process.wait()})")

    def close(self):
        try:
            self.process.stdin.close()
            self.process.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(5)
        shutil.rmtree(self.metrics_dir, ignore_errors=True)


def spread(values: list[float]) -> str:
    """Median, quartiles and extremes of per-round figures."""
    if len(values) < 2:
        return f"{values[0]:.3f}"
    low, _median, high = statistics.quantiles(values, n=4)
    return f"{statistics.median(values):.3f} (quartiles {low:.3f}–{high:.3f}; extremes {min(values):.3f}–{max(values):.3f})"


def report(names: list[str], rounds: list[dict], *, args, ready: dict, finals: dict, spans: Counter, loads: tuple):
    per_call = {name: [r[name]["p1"]["gateway"] / args.calls * 1000 for r in rounds] for name in names}
    bare = {name: [r[name]["p1"]["bare"] / args.calls * 1000 for r in rounds] for name in names}
    p1_cpu = {name: [r[name]["p1"]["gateway_cpu"] / args.calls * 1000 for r in rounds] for name in names}
    p3 = {name: [r[name]["p3"]["overhead"] / r[name]["p3"]["iterations"] * 1000 for r in rounds] for name in names}
    wall = {name: [r[name]["p3"]["wall"] / args.turns * 1000 for r in rounds] for name in names}
    p3_cpu = {name: [r[name]["p3"]["cpu"] / args.turns * 1000 for r in rounds] for name in names}
    queries = {name: [r[name]["p3"]["queries"] / args.turns for r in rounds] for name in names}
    print(f"{len(rounds)} rounds; each: per variant a P1 block of {args.calls} bare POSTs and {args.calls} gateway calls, "
          f"then a P3 block of {args.turns} turns ({args.tool_calls} tool calls each)")
    print(f"load average before: {loads[0]}; after: {loads[1]} ({os.cpu_count()} CPUs)")
    for name in names:
        state = ready[name]
        traces = f"on ({state['sampler']}{', SQL spans' if state['sql'] else ''})" if state["tracing"] else "off"
        print(f"  {name:8} child: metrics {'on' if state['metrics'] else 'off'}, traces {traces}; "
              f"recorded {finals[name]['recorded']}")
    if spans:
        print(f"spans the sink received: {sum(spans.values())} ({', '.join(f'{n} {c}' for n, c in spans.most_common())})")
    print("\nmedians over rounds  P1 ms/call  bare ms  P1 ratio  CPU ms/call   P3 ms/iter  turn ms  CPU ms/turn  SQL/turn")
    for name in names:
        ratio = statistics.median(g / b for g, b in zip(per_call[name], bare[name], strict=True))
        print(f"  {name:17.17}  {statistics.median(per_call[name]):>10.3f}  {statistics.median(bare[name]):>7.3f}"
              f"  {ratio:>8.2f}  {statistics.median(p1_cpu[name]):>11.3f}   {statistics.median(p3[name]):>10.3f}"
              f"  {statistics.median(wall[name]):>7.1f}  {statistics.median(p3_cpu[name]):>11.1f}"
              f"  {statistics.median(queries[name]):>8.1f}")
    print(f"\neach variant over off, per round (median, quartiles, extremes; goal ≤ {GOAL}):")
    for name in names[1:]:
        def over(figures):
            return spread([mine / base for mine, base in zip(figures[name], figures["off"], strict=True)])

        print(f"  {name}:")
        print(f"    P1 gateway call (wall):        {over(per_call)}")
        print(f"    P1 gateway call (child's CPU): {over(p1_cpu)}")
        print(f"    P3 overhead per iteration:     {over(p3)}")
        print(f"    P3 whole turn (wall):          {over(wall)}")
        print(f"    P3 whole turn (child's CPU):   {over(p3_cpu)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=25, help="gateway calls (and bare POSTs) in a P1 block")
    parser.add_argument("--turns", type=int, default=3, help="turns in a P3 block")
    parser.add_argument("--tool-calls", type=int, default=4, help="tool calls per turn")
    parser.add_argument("--variants", default="off,on", help=f"comma-separated, off first; of {', '.join(VARIANTS)}")
    parser.add_argument("--sample-ratio", type=float, default=0.1,
                        help="OTEL_TRACES_SAMPLER_ARG of the `sampled` variant (parentbased_traceidratio)")
    parser.add_argument("--profile", metavar="VARIANTS", help="profile one more P1 and P3 block in these children")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--model-url", help=argparse.SUPPRESS)
    parser.add_argument("--mcp-url", help=argparse.SUPPRESS)
    parser.add_argument("--micro", action="store_true", help="only the metrics' CPU per recording, in this process")
    args = parser.parse_args()
    if args.child:
        return child_main(args)
    if args.micro:
        return micro_main(20000)
    names = args.variants.split(",")
    if names[0] != "off" or not set(names) <= set(VARIANTS) or len(set(names)) != len(names):
        parser.error(f"--variants: off first, then any of {', '.join(list(VARIANTS)[1:])}, each once")
    if args.profile and not set(args.profile.split(",")) <= set(names):
        parser.error("--profile: variants run")
    if min(args.rounds, args.calls, args.turns) < 1 or args.tool_calls < 0 or not 0 <= args.sample_ratio <= 1:
        parser.error("--rounds, --calls and --turns: at least 1; --tool-calls: 0 or more; --sample-ratio: 0 to 1")
    sink = OtlpSink()
    children = {}
    try:
        with model_server(delay=0.0, tool_calls=args.tool_calls) as model_url, example_server() as mcp_url:
            for name in names:  # one at a time: each sets up a database of its own
                children[name] = Child(name, sink=sink.url, ratio=args.sample_ratio, model_url=model_url,
                                       mcp_url=mcp_url, tool_calls=args.tool_calls)
                children[name].ask("")
            ready = {name: child.ask("state") for name, child in children.items()}
            sink.spans.clear()  # the warm-up's
            loads, rounds = [load_average()], []
            for number in range(args.rounds):
                order = names if number % 2 == 0 else names[::-1]
                results = {name: {} for name in names}
                for name in order:
                    results[name]["p1"] = children[name].ask(f"p1 {args.calls}")
                for name in order:
                    results[name]["p3"] = children[name].ask(f"p3 {args.turns}")
                rounds.append(results)
            loads.append(load_average())
            spans = Counter(sink.spans)
            for name in args.profile.split(",") if args.profile else ():
                children[name].ask(f"profile {args.calls * 4} {args.turns * 4}")
            finals = {name: child.ask("state") for name, child in children.items()}
    finally:
        for child in children.values():
            child.close()
        sink.close()
    report(names, rounds, args=args, ready=ready, finals=finals, spans=spans, loads=tuple(loads))


# ---------------------------------------------------------------- in-process: one recording's CPU

def micro_main(repeat: int):
    """CPU per recording of the metrics functions, in this process, with metrics on (a fresh
    multiprocess directory; no database, no network): figures too small for the rounds to resolve."""
    os.environ.update({"ASIXTO_METRICS": "1", "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="asixto-bench-metrics-")})
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")
    import django

    django.setup()
    from asixto import metrics

    def cpu_us(record) -> float:
        record()  # the label set's first use creates its entry in the file
        started = time.process_time()
        for _ in range(repeat):
            record()
        return (time.process_time() - started) / repeat * 1e6

    figures = {
        "tool_call (a gateway call)": lambda: metrics.tool_call(server="soporte", outcome="ok", level="read",
                                                                seconds=0.002, attempts=1),
        "model_request (tokens in and out)": lambda: metrics.model_request(outcome="ok", seconds=0.01, tokens_in=100,
                                                                          tokens_out=20),
        "turn_started + turn_left + turn_finished": lambda: (
            metrics.turn_started(first_run=True, queued_seconds=0.01), metrics.turn_left(),
            metrics.turn_finished(status="done", seconds=0.1, iterations=5)),
    }
    print(f"CPU per recording, metrics on; then per hook, traces on (median of 5 runs of {repeat}):")
    for name, record in figures.items():
        print(f"  {name:54} {statistics.median(cpu_us(record) for _ in range(5)):6.2f} µs")
    shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)

    # Our own hooks around calls that do nothing: what a tool call, HTTP request or SQL statement
    # costs in a trace the sampler leaves out, and what its span costs when kept, up to its export
    # (scrubbed, then handed to an exporter that drops it; the OTLP encoding is in the rounds).
    from opentelemetry.sdk.trace.export import SpanExportResult

    from asixto import tracing

    class Dropped:
        def export(self, spans):
            return SpanExportResult.SUCCESS

        def shutdown(self):
            pass

        def force_flush(self, timeout_millis=30000):
            return True

    outcome = SimpleNamespace(outcome="ok", attempts=1)
    hooked = tracing.tool_call(lambda *, arguments: outcome)
    statement = 'SELECT "runtime_turn"."id", "runtime_turn"."status" FROM "runtime_turn" WHERE "runtime_turn"."id" = %s'
    database = {"connection": SimpleNamespace(vendor="postgresql")}

    def request():
        with tracing.http_request("POST", "http://127.0.0.1:8931/mcp", {}) as traced:
            traced.answered(200)

    def query():
        tracing._sql_span(lambda *_args: None, statement, ("id",), False, database)

    for sampler, kept in (("always_off", "left out by the sampler"), ("always_on", "kept, to its export")):
        os.environ["OTEL_TRACES_SAMPLER"] = sampler
        tracing.setup(service="asixto-bench", exporter=Dropped())
        hooks = {"tool.call span": lambda: hooked(arguments={}), "HTTP request span": request, "SQL statement span": query}
        with tracing.span("turn"):  # the parent the sampler kept or left out
            for name, hook in hooks.items():
                print(f"  {name + ', ' + kept:54} {statistics.median(cpu_us(hook) for _ in range(5)):6.2f} µs")
        tracing.shutdown()


# ---------------------------------------------------------------- a child: one variant

def child_main(args):
    setup(bench_database(f"_{args.child}"))
    from django.conf import settings
    from django_tenants.utils import tenant_context

    from _turns import tenant_with_agent
    from asixto import tracing
    from gateway_overhead import bare_post
    from tools.gateway import CallContext, call_tool, flush_records
    from turn_overhead import TurnMeter

    traced = tracing.setup(service="asixto-bench")  # as wsgi.py and a worker's start do
    tenant = tenant_with_agent(slug="bench-observability", model_url=args.model_url, mcp_url=args.mcp_url,
                               iteration_limit=args.tool_calls + 2)
    arguments = {"consulta": "router"}
    context = CallContext(channel="chat", idempotency_key="bench", conversation_id="bench")
    bare = bare_post(args.mcp_url, arguments, context)
    meter = TurnMeter(tenant)

    def p1(calls: int) -> dict:
        started = time.perf_counter()
        for _ in range(calls):
            bare()
        tracing.flush()  # a traced child traces the bare POSTs too: their spans are not the gateway's
        bare_seconds = time.perf_counter() - started
        started, cpu_started = time.perf_counter(), time.process_time()
        with tenant_context(tenant):
            for _ in range(calls):
                assert call_tool(name="soporte__buscar_producto", arguments=arguments, context=context).ok
        flush_records()
        tracing.flush()
        return {"bare": bare_seconds, "gateway": time.perf_counter() - started, "gateway_cpu": time.process_time() - cpu_started}

    def p3(turns: int) -> dict:
        overhead = wall = cpu = 0.0
        iterations = queries = 0
        for _ in range(turns):
            turn_wall, wire, tool, turn_iterations, turn_queries, _connections, routing, turn_cpu, _model = meter.turn()
            overhead += turn_wall - wire - tool - routing
            wall, cpu, iterations = wall + turn_wall, cpu + turn_cpu, iterations + turn_iterations
            queries += turn_queries
        started, cpu_started = time.perf_counter(), time.process_time()
        tracing.flush()  # the block's spans, exported: the tracing's cost, so the runtime's
        flushed, flush_cpu = time.perf_counter() - started, time.process_time() - cpu_started
        return {"overhead": overhead + flushed, "iterations": iterations, "wall": wall + flushed, "cpu": cpu + flush_cpu,
                "queries": queries}

    def state() -> dict:
        recorded = "nothing (metrics off)"
        if settings.ASIXTO_METRICS:
            from prometheus_client import CollectorRegistry, multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            wanted = ("asixto_tool_calls_total", "asixto_turns_total", "asixto_model_requests_total")
            totals = Counter()
            for family in registry.collect():
                for sample in family.samples:
                    if sample.name in wanted:
                        totals[sample.name] += sample.value
            recorded = ", ".join(f"{name} {totals[name]:.0f}" for name in wanted)
        sampler = " ".join(filter(None, (os.environ.get("OTEL_TRACES_SAMPLER", "every trace kept"),
                                         os.environ.get("OTEL_TRACES_SAMPLER_ARG"))))
        return {"metrics": settings.ASIXTO_METRICS, "tracing": traced, "sampler": sampler, "recorded": recorded,
                "sql": settings.ASIXTO_TRACE_SQL}

    def profile(calls: int, turns: int) -> dict:
        import cProfile
        import pstats

        profiler = cProfile.Profile(time.thread_time)  # CPU time: waits on the network and PostgreSQL left out
        profiler.enable()
        p1(calls)
        p3(turns)
        profiler.disable()
        if os.environ.get("BENCH_PROFILE_FILE"):
            profiler.dump_stats(f"{os.environ['BENCH_PROFILE_FILE']}.{args.child}")
        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats(os.environ.get("BENCH_SORT", "tottime")).print_stats(60)
        return {}

    for _ in range(2):  # warm-up: connections, caches, validators, the exporter's session
        p1(25)
        p3(3)
    print(REPLY + "{}", flush=True)
    commands = {"p1": p1, "p3": p3, "state": state, "profile": profile}
    for line in sys.stdin:
        command, *numbers = line.split()
        print(REPLY + json.dumps(commands[command](*map(int, numbers))), flush=True)


if __name__ == "__main__":
    main()
