"""P4: turns in flight at once, and turns per second, on ONE worker process whose model takes 1 s
to answer; and the peak of PostgreSQL connections that costs.

    python bench/turn_concurrency.py [--turns 400] [--concurrency 200] [--delay 1.0] [--tool-calls 0]
                                     [--db-pool 20] [--max-connections 50] [--post-first]

One `celery -A asixto worker --pool threads --concurrency N` process (the README's scaling
advice) runs turns for a tenant whose model (bench/_model_server.py, its own process) answers
each request after `--delay` seconds; with `--tool-calls k` each turn also calls the example MCP
server k times (k + 2 model requests a turn). `--turns` messages are posted at once through the
channel service. Every 20 ms the benchmark reads, on one connection of its own, how many turns
are running and how many connections the worker holds (pg_stat_activity, by the worker's
application name). This mode reports the peak: a burst posted in-process, not a sustained load.

`--db-pool N` gives the worker Django's psycopg pool with max N. Without it the worker has the
shipped settings' pool (DB_POOL_MAX_SIZE, 10). The machine's PostgreSQL is shared, so the run
stops (and says so) if the worker goes over `--max-connections`.

Goal: ≥ 200 turns in flight on one process, within ≤ 20 connections. Database of its own:
asixto_bench_turn_concurrency (recreated); Redis from REDIS_URL.

    python bench/turn_concurrency.py --live SECONDS --rate R [--ramp 10] [--concurrency 400] [--db-pool 20]
                                     [--sample 0.05] [--post-threads 32] [--profile DIR]

P4 sustained (issue 22): turns posted live through the channel API for SECONDS, at R a second,
by a poster in a process of its own (bench/_poster.py: a channel key, one new conversation and one
customer message a turn, texts of the soporte dev sets), to gunicorn as `./run` starts it
(WEB_CONCURRENCY, WEB_THREADS pass through); one worker process (`--pool threads`, a database
pool of 20 as `./run` gives it); the model answers every request after `--delay` s; one tool call a
turn against the example MCP server; routing on, the tenant's catalog indexed before the run, so
the cheap check reads every message (the stand-in model answers the router with the tool when the
check asks it). The turns running and queued are sampled every `--sample` s. Printed over the
steady part (from `--ramp` s of posting until posting stops; `--live 70 --ramp 10` is a minute):
turns running (min, p10, median, max; the goal is the min) and queued, turns finished a second
(fewer finished than posted, or a backlog that grows, means R is more than the platform takes: the
goal counts as held only without that), posted → answered (median, p90),
failed posts and turns, how many turns the router was asked for, each process's CPU per turn
finished (worker, gunicorn, model stand-in, MCP server, PostgreSQL backends; the poster's apart)
and the load average. `--profile DIR` runs py-spy (`PY_SPY` or on PATH; not a project requirement:
`pip install py-spy` elsewhere) on the worker and each web worker in the steady part and prints
where their GIL went. ASIXTO_ROUTING=0 in the environment runs the same without routing.

Not covered by --live: conversations of more than one message (each turn opens its own: no history
to read, the gate reads one message), event streams and webhooks (nothing listens for the reply),
more than one tenant or key (one tenant's caches stay warm), models or tool servers that are slow
or fail, messages other than the soporte dev sets' (299 texts, cycled, so the per-message caches of
the routing code see repeats), TLS and a proxy in front, PostgreSQL and Redis on other machines
(here they share the 2 CPUs), and the beat's periodic sweeps (none runs). The fair-share limits
(runtime/limits.py) are raised for the tenant: they would refuse messages past 200 in flight."""

import argparse
import os
import statistics
import threading
import time

os.environ.setdefault("ASIXTO_ALLOW_PRIVATE_HOSTS", "1")  # the stand-ins are on loopback (M2)

from _django import setup  # noqa: E402
from _live_turns import cpu_seconds, index_catalog  # noqa: E402
from _turns import WORKER_APPLICATION_NAME, example_server, model_server, tenant_with_agent, worker  # noqa: E402

GOAL_IN_FLIGHT = 200
GOAL_CONNECTIONS = 20


def post_turns(tenant, count: int, threads: int = 8) -> list:
    """`count` customer messages through the channel service, each in a conversation of its own,
    from a few threads so posting is not the bottleneck."""
    from django.db import connection
    from django_tenants.utils import tenant_context

    from runtime.channel import conversation_start, message_post

    ids, lock = [], threading.Lock()

    def post(n):
        try:
            with tenant_context(tenant):
                for i in range(n):
                    conversation = conversation_start(data={"channel_kind": "chat", "channel_name": "bench", "language": "es"})
                    turn = message_post(conversation=conversation, text=f"¿Tienen routers? {i}").turn
                    with lock:
                        ids.append(turn.pk)
        finally:
            connection.close()

    workers = [threading.Thread(target=post, args=(count // threads + (1 if i < count % threads else 0),)) for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return ids


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds the model takes to answer")
    parser.add_argument("--tool-calls", type=int, default=0, help="tool calls per turn")
    parser.add_argument("--db-pool", type=int, default=0, metavar="N", help="the worker uses Django's psycopg pool, max N")
    parser.add_argument("--max-connections", type=int, default=50, help="stop if the worker holds more (shared PostgreSQL)")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--post-first", action="store_true",
                        help="queue every turn before the worker starts (its capacity alone, posting costs nothing)")
    live = parser.add_argument_group("--live: turns posted through the channel API by a process of its own")
    live.add_argument("--live", type=float, metavar="SECONDS", help="post for this long (the steady part starts after --ramp)")
    live.add_argument("--rate", type=float, default=60, help="turns posted a second")
    live.add_argument("--ramp", type=float, default=10, help="seconds of posting before the steady part")
    live.add_argument("--sample", type=float, default=0.05, help="seconds between samples of the turns running")
    live.add_argument("--post-threads", type=int, default=32, help="the poster's threads (an open loop: enough to keep the rate)")
    live.add_argument("--profile", metavar="DIR", help="py-spy the worker and each web worker in the steady part (PY_SPY=path)")
    args = parser.parse_args()
    if args.live:
        from _live_turns import live as run_live

        if args.concurrency == parser.get_default("concurrency"):
            args.concurrency = 400
        args.db_pool = args.db_pool or 20  # as ./run starts the worker
        args.timeout = max(args.timeout, 120)
        return run_live(args, GOAL_IN_FLIGHT)
    setup()
    import psycopg
    from django.conf import settings
    from django.db import connection

    database = settings.DATABASES["default"]["NAME"]  # the benchmark's own (see _django.py)
    with model_server(delay=args.delay, tool_calls=args.tool_calls) as model_url, example_server() as mcp_url:
        tenant = tenant_with_agent(slug="bench-flight", model_url=model_url, mcp_url=mcp_url if args.tool_calls else None,
                                   iteration_limit=args.tool_calls + 2)
        if args.tool_calls:
            index_catalog(tenant)  # routing reads every message, as in production once the sync's task ran
        schema = tenant.schema_name
        connection.close()
        watcher = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
        samples = []  # (seconds since posting, running, connections of the database)

        def read():
            connections = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
                [database, WORKER_APPLICATION_NAME],
            ).fetchone()[0]
            counts = dict(watcher.execute(f'SELECT status, count(*) FROM "{schema}".runtime_turn GROUP BY status').fetchall())
            return connections, counts

        posting = []  # seconds it took to post the measured turns

        def post_measured(count):
            began = time.monotonic()
            post_turns(tenant, count)
            posting.append(time.monotonic() - began)

        if args.post_first:
            post_measured(args.turns)
            post_turns(tenant, 1, threads=1)
        with worker(concurrency=args.concurrency, pool_max=args.db_pool) as child:
            if not args.post_first:
                # Warm up: one turn through the worker, so its threads and imports are ready.
                post_turns(tenant, 1, threads=1)
                deadline = time.monotonic() + 120
                while sum(read()[1].get(state, 0) for state in ("queued", "running")) and time.monotonic() < deadline:
                    time.sleep(0.1)
            cpu_before = cpu_seconds(child.pid)
            load_before = open("/proc/loadavg").read().split()[:3]
            started = time.monotonic()
            poster = threading.Thread(target=post_measured if not args.post_first else post_turns,
                                      args=(0,) if args.post_first else (args.turns,))
            poster.start()
            aborted = ""
            deadline = started + args.timeout
            while True:
                connections, counts = read()
                samples.append((time.monotonic() - started, counts.get("running", 0), connections))
                finished = counts.get("done", 0) + counts.get("failed", 0)
                if connections > args.max_connections:
                    aborted = f"stopped: the worker had {connections} connections open (limit {args.max_connections})"
                    child.kill()
                    break
                if finished >= args.turns + 1 or time.monotonic() > deadline or child.poll() is not None:
                    break
                time.sleep(0.02)
            poster.join()
            cpu_used = cpu_seconds(child.pid) - cpu_before if child.poll() is None else 0.0
            load_after = open("/proc/loadavg").read().split()[:3]
        totals = dict(watcher.execute(f'SELECT status, count(*) FROM "{schema}".runtime_turn GROUP BY status').fetchall())
        errors = watcher.execute(f'SELECT error_code, count(*) FROM "{schema}".runtime_turn WHERE status = %s GROUP BY 1',
                                 ["failed"]).fetchall()
        span = watcher.execute(
            f'SELECT extract(epoch FROM max(finished_at) - min(started_at)), '
            f'percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)), '
            f'percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at)) '
            f'FROM "{schema}".runtime_turn WHERE finished_at IS NOT NULL AND created_at > now() - interval \'1 hour\''
        ).fetchone()
        watcher.close()
    peak_running = max(s[1] for s in samples)
    peak_connections = max(s[2] for s in samples)
    busy = [s[2] for s in samples if s[1] > 0]
    done = totals.get("done", 0) - 1  # the warm-up turn (or the extra one queued first)
    print(f"worker: 1 process, --pool threads --concurrency {args.concurrency}; "
          f"database connections: {'psycopg pool, max %d' % args.db_pool if args.db_pool else 'the pool of the shipped settings (DB_POOL_MAX_SIZE)'}")
    print(f"model answers after {args.delay:g} s; {args.tool_calls} tool calls a turn ({args.tool_calls + (2 if args.tool_calls else 1)} model requests"
          f"{', + the router when the routing check asks it; the catalog indexed first' if args.tool_calls else ''})")
    print(f"turns posted: {args.turns}; done: {done}; failed: {totals.get('failed', 0)} {dict(errors) if errors else ''}; "
          f"still queued or running: {totals.get('queued', 0) + totals.get('running', 0)}")
    if aborted:
        print(aborted)
    print(f"turns in flight (running at once): peak {peak_running}  (goal ≥ {GOAL_IN_FLIGHT})")
    if span and span[0]:
        print(f"throughput: {(done + totals.get('failed', 0)) / float(span[0]):.1f} turns/s over {float(span[0]):.1f} s; "
              f"median turn time (posted → answered): {float(span[1]):.2f} s")
        # What limits the turns in flight: how fast they arrive (posting) or how fast the worker
        # takes them up (queued → started).
        print(f"posting: {args.turns} turns in {posting[0]:.1f} s ({args.turns / posting[0]:.0f}/s"
              f"{', before the worker started' if args.post_first else ''}); median wait queued → started: {float(span[2]):.2f} s")
    if cpu_used and done:
        print(f"worker CPU (user + system): {cpu_used:.2f} s, {cpu_used / (done + totals.get('failed', 0)) * 1000:.1f} ms a turn"
              + (" (counted from the worker's launch: its start-up, imports and Django's set-up included)"
                 if args.post_first else ""))
    print(f"load average before / after: {' '.join(load_before)} / {' '.join(load_after)}")
    print(f"PostgreSQL connections of the worker: peak {peak_connections}, "
          f"median while turns ran {statistics.median(busy) if busy else 0:.0f}  (goal ≤ {GOAL_CONNECTIONS})")


if __name__ == "__main__":
    main()
