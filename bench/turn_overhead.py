"""P3: the runtime's own cost per tool-loop iteration, and Celery's queue-to-start latency.

    python bench/turn_overhead.py [--turns 50] [--tool-calls 4] [--queued 50] [--db-pool 20]

Overhead: turns run in this process (`turn_execute`, as a worker thread runs them) against a
stand-in model that answers at once (bench/_model_server.py, its own process: it asks for
`--tool-calls` calls of `soporte__buscar_producto`, then answers) and the example MCP server
(examples/soporte, its own process, answers at once). The model's time is the time on the wire:
from the model client's request entering its transport to the last byte of the answer read (the
stand-in's work and loopback HTTP, timed at the transport's connection pool); the runtime's own
work around it — encoding the request, httpx's client and transport layers (and an
instrumentation around them), parsing and checking the answer — is the runtime's, so it stays in
the overhead (the model client's time is printed too, with that share). Time inside the gateway
(`call_tool`) and routing is measured and taken out; what is left — claiming the turn, storing
each step, budgets, events, the model requests' encoding and parsing, storing the reply, flushing
the call records — is the overhead, divided by the loop's iterations (model calls of the tool
loop). Goal: ≤ 5 ms per iteration. The load average is printed before and after.

Not covered: a real model's answer sizes (the stand-in's are a few hundred bytes; parsing grows
with them), TLS to a model, streaming answers, tool calls that fail or retry, several turns at once
in one worker (bench/turn_concurrency.py), the gateway's own overhead (bench/gateway_overhead.py).
No variants are compared here, so nothing alternates: the figures are per-turn medians.

Queue-to-start: turns posted one at a time through the channel service (`message_post`, which
queues the task on commit) to a real worker (`--pool threads`); from the turn's row being
written to the worker claiming it (`Turn.created_at` → `Turn.started_at`, both this machine's
clock), which includes the commit, the publish, Redis and the worker's pick-up. Goal: ≤ 20 ms
median.

Each run uses a database of its own (asixto_bench_turn_overhead, recreated) and the Redis of
REDIS_URL (use a database number no running worker listens on)."""

import argparse
import os
import statistics
import time

import httpx

os.environ.setdefault("ASIXTO_ALLOW_PRIVATE_HOSTS", "1")  # the stand-ins are on loopback (M2)

from _django import setup  # noqa: E402
from _turns import example_server, model_server, tenant_with_agent, worker  # noqa: E402

GOAL_OVERHEAD_MS = 5.0
GOAL_QUEUE_MS = 20.0


class Stopwatch:
    """Wraps a function and adds up the time spent inside it."""

    def __init__(self, function):
        self.function, self.seconds, self.calls = function, 0.0, 0

    def __call__(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return self.function(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1


class WireTime:
    """The model client's connection pool, timed: from a request entering it to the last byte of
    its answer read, counted only while `active` (inside the tool loop's model requests, not routing's)."""

    def __init__(self, transport):
        self.transport, self.seconds, self.active = transport, 0.0, False

    def handle_request(self, request):
        started = time.perf_counter()
        response = self.transport.handle_request(request)
        if self.active:
            self.seconds += time.perf_counter() - started
            response.stream = _TimedStream(response.stream, self)
        return response

    def close(self):
        self.transport.close()


class _TimedStream(httpx.SyncByteStream):
    def __init__(self, stream, wire):
        self.stream, self.wire = stream, wire

    def __iter__(self):
        chunks = iter(self.stream)
        while True:
            started = time.perf_counter()
            try:
                chunk = next(chunks)
            except StopIteration:
                self.wire.seconds += time.perf_counter() - started
                return
            self.wire.seconds += time.perf_counter() - started
            yield chunk

    def close(self):
        self.stream.close()


class ModelRequests(Stopwatch):
    """The tool loop's model requests: their whole time in the client, and their wire time."""

    def __init__(self, function, wire):
        super().__init__(function)
        self.wire = wire

    def __call__(self, *args, **kwargs):
        self.wire.active = True
        try:
            return super().__call__(*args, **kwargs)
        finally:
            self.wire.active = False


class QueryCounter:
    """Counts the SQL statements a turn sends and the connections it opens (a diagnosis of the
    overhead: at ~1 ms a round trip on a loaded machine, queries are most of it)."""

    def __init__(self):
        self.queries = self.connections = 0

    def __call__(self, execute, sql, params, many, context):
        self.queries += 1
        return execute(sql, params, many, context)

    def connected(self, **kwargs):
        self.connections += 1


class TurnMeter:
    """Runs turns in this process (`turn_execute`, as a worker thread runs them) with the model
    client, the gateway and routing timed: installed once, then one `turn()` at a time."""

    def __init__(self, tenant):
        from django.db.backends.signals import connection_created
        from django_tenants.utils import tenant_context

        import runtime.turn as turn_module
        from runtime import model_client
        from runtime.channel import conversation_start

        self.tenant, self.turn_module = tenant, turn_module
        # Beneath httpx's transport, at its connection pool: whatever wraps the transport (an
        # instrumentation: bench/observability_cost.py) is the runtime's, not the model's.
        transport = model_client._client._transport
        self.wire = WireTime(transport._pool)
        transport._pool = self.wire
        self.model, self.tool = ModelRequests(turn_module.complete, self.wire), Stopwatch(turn_module.call_tool)
        self.routing = Stopwatch(turn_module.route_message)  # R6: the local gate, then the router's model call
        turn_module.complete, turn_module.call_tool, turn_module.route_message = self.model, self.tool, self.routing
        self.counter = QueryCounter()
        connection_created.connect(self.counter.connected, weak=False)
        self.made = 0
        with tenant_context(tenant):
            self.conversation = conversation_start(data={"channel_kind": "chat", "channel_name": "bench", "language": "es"})

    def turn(self):
        """One turn: (wall, wire, tool, iterations, queries, connections, routing, cpu, model client) seconds."""
        from django.db import connection
        from django_tenants.utils import tenant_context

        from runtime.models import Message, Turn

        wire, model, tool, routing, counter = self.wire, self.model, self.tool, self.routing, self.counter
        with tenant_context(self.tenant):
            message = Message.objects.create(conversation=self.conversation, role="customer",
                                             text=f"¿Tienen routers? {self.made}")
            self.made += 1
            turn = Turn.objects.create(conversation=self.conversation, message=message)  # no task: run here
            model.seconds = wire.seconds = tool.seconds = routing.seconds = 0.0
            counter.queries = counter.connections = 0
            started, cpu_started = time.perf_counter(), time.process_time()
            with connection.execute_wrapper(counter):
                self.turn_module.turn_execute(turn_id=turn.pk)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
            turn = Turn.objects.get(pk=turn.pk)
        assert turn.status == "done", (turn.status, turn.error_code, turn.error_detail)
        return (wall, wire.seconds, tool.seconds, turn.iterations, counter.queries, counter.connections,
                routing.seconds, cpu, model.seconds)


def overhead_ms(sample) -> float:
    """The runtime's own time per loop iteration of one turn's sample: not the model's wire time,
    not the gateway+tool, not routing."""
    wall, wire, tool, iterations, _queries, _connections, routing, _cpu, _model = sample
    return (wall - wire - tool - routing) / iterations * 1000


def measure_overhead(tenant, turns: int):
    meter = TurnMeter(tenant)
    samples, iterations_seen = [], set()
    for n in range(turns + 5):  # the first five warm up connections, caches and validators
        sample = meter.turn()
        if n >= 5:
            samples.append(sample)
            iterations_seen.add(sample[3])
    return samples, iterations_seen, meter.model.calls, meter.tool.calls


def measure_queue_to_start(tenant, count: int):
    from django.db import connection
    from django_tenants.utils import tenant_context

    from runtime.channel import conversation_start, message_post
    from runtime.models import Turn

    delays = []
    with tenant_context(tenant):
        conversation = conversation_start(data={"channel_kind": "chat", "channel_name": "bench", "language": "es"})
        for n in range(count + 3):  # three to warm the worker's threads and connections
            turn = message_post(conversation=conversation, text=f"hola {n}").turn
            deadline = time.monotonic() + 60
            while True:
                state = Turn.objects.filter(pk=turn.pk).values("status", "created_at", "started_at").get()
                if state["status"] in ("done", "failed"):
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"turn {turn.pk} did not finish: is the worker running?")
                time.sleep(0.005)
            if n >= 3:
                delays.append((state["started_at"] - state["created_at"]).total_seconds())
            connection.close()
            time.sleep(0.05)  # an idle worker each time: latency, not throughput
    return delays


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--tool-calls", type=int, default=4, help="tool calls per turn")
    parser.add_argument("--queued", type=int, default=50, help="turns for the queue-to-start figure")
    parser.add_argument("--db-pool", type=int, default=0, metavar="N",
                        help="use Django's psycopg pool (max N connections) here and in the worker")
    args = parser.parse_args()
    if args.db_pool:
        os.environ["BENCH_DB_POOL_MAX"] = str(args.db_pool)
        os.environ["DJANGO_SETTINGS_MODULE"] = "worker_settings"
    setup()
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    with model_server(delay=0.0, tool_calls=args.tool_calls) as model_url, example_server() as mcp_url:
        tenant = tenant_with_agent(slug="bench-turns", model_url=model_url, mcp_url=mcp_url,
                                   iteration_limit=args.tool_calls + 2)
        samples, iterations, model_calls, tool_calls = measure_overhead(tenant, args.turns)
        with worker(concurrency=8, pool_max=args.db_pool):
            delays = measure_queue_to_start(tenant, args.queued)
    per_iteration = [overhead_ms(sample) for sample in samples]
    with_routing = [(wall - model - tool) / its * 1000 for wall, model, tool, its, *_rest in samples]
    cpu_per_iteration = [cpu / its * 1000 for _w, _m, _t, its, _q, _c, _r, cpu, _mc in samples]
    wall_ms = statistics.median(s[0] for s in samples) * 1000
    model_ms = statistics.median(s[1] for s in samples) * 1000
    tool_ms = statistics.median(s[2] for s in samples) * 1000
    loop = sorted(iterations)
    print(f"load average before: {load_before}; after: {' '.join(open('/proc/loadavg').read().split()[:3])} "
          f"({os.cpu_count()} CPUs)")
    print(f"database connections: {'psycopg pool, max %d' % args.db_pool if args.db_pool else 'no pool (settings as shipped)'}")
    reply = ", 1 reply request" if args.tool_calls else " (the answer is the reply)"
    print(f"turns measured: {len(samples)} (each: {args.tool_calls} tool calls, {loop} loop iterations{reply})")
    print(f"  median turn wall time:            {wall_ms:.1f} ms")
    client_ms = statistics.median(s[8] for s in samples) * 1000
    print(f"  median time in the model client:  {client_ms:.1f} ms ({model_calls // (args.turns + 5)} requests a turn), "
          f"of which on the wire (the model's): {model_ms:.1f} ms; the rest (encoding, parsing) counts as overhead")
    print(f"  median time in the gateway+tool:  {tool_ms:.1f} ms ({tool_calls // (args.turns + 5)} calls a turn)")
    print(f"  median time in routing (R6):      {statistics.median(s[6] for s in samples) * 1000:.1f} ms "
          f"(the local gate, and the router's model call when the gate lets the message through)")
    print(f"  SQL statements a turn (median):   {statistics.median(s[4] for s in samples):.0f}, "
          f"connections taken a turn (opened, or from the pool): {statistics.median(s[5] for s in samples):.0f}")
    print(f"overhead per loop iteration: median {statistics.median(per_iteration):.2f} ms, "
          f"p90 {statistics.quantiles(per_iteration, n=10)[-1]:.2f} ms  (goal ≤ {GOAL_OVERHEAD_MS:g} ms; routing not counted)")
    print(f"  the same with routing counted as overhead: median {statistics.median(with_routing):.2f} ms")
    print(f"  CPU time of this process per loop iteration (everything in it, the model and MCP clients "
          f"included): median {statistics.median(cpu_per_iteration):.2f} ms  (load average {open('/proc/loadavg').read().split()[0]})")
    delays_ms = [d * 1000 for d in delays]
    print(f"queue-to-start over {len(delays_ms)} turns: median {statistics.median(delays_ms):.1f} ms, "
          f"p90 {statistics.quantiles(delays_ms, n=10)[-1]:.1f} ms, max {max(delays_ms):.1f} ms  "
          f"(goal ≤ {GOAL_QUEUE_MS:g} ms median)")


if __name__ == "__main__":
    main()
