"""Issue 19: does the Celery worker's memory grow with each PostgreSQL or Redis outage, or does it
reach a high-water mark and stay there?

    python bench/worker_memory.py [--rounds 8] [--faults postgres,redis] [--turns 100] [--outage 4]
                                  [--idle 10] [--trim] [--tracemalloc FRAMES] [--holders MODULE.TYPE [--roots]]

One worker started with `./run`'s command line (`celery -A asixto worker --pool threads
--concurrency 200`, a database pool of 20) and a beat, both reaching PostgreSQL and Redis through
TCP proxies (tests/support/tcp_proxy.py) that the benchmark cuts: every connection closed, new ones
refused, for `--outage` seconds, which is what a restart looks like to a client (the shared
services are never stopped). Each round posts `--turns` messages through the channel service (this
process, not proxied), each in a conversation of its own, whose turns call the example MCP server
once (the stand-in model, bench/_model_server.py, answers after 0.3 s: 3 model requests a turn);
once a quarter of them are running, the round's fault (`--faults`, cycled: postgres, redis or
none) cuts the worker's and beat's path to that service; then the round waits until every turn
is done or failed. Routing is on (the catalog indexed first).

Printed per round: the turns done and failed, the worker's RSS when the round's turns are finished
and its peak during the round (psutil, every 0.5 s); after `--idle` seconds, what the worker says of
itself (bench/_memory_probe.py): its RSS, after a full garbage collection, and with `--trim` after
glibc's malloc_trim(0) (what the allocator holds but nothing uses goes back to the system), its
threads, Python's allocated blocks and live objects, and the object types that grew most since the
round before. At the end, the types that grew since the end of the first round (its threads, pool
and caches are there by then); with `--tracemalloc N` (slower, and tracemalloc's snapshots count
in the RSS) the allocations that grew, with N frames each; with `--holders MODULE.TYPE` how many
objects of that type are alive and what holds one of them, and with `--roots` too what keeps it
alive (the chains down to it from a module's globals, a class or a running function's variable;
costly, so the RSS figures of such a run are not to be compared). `--faults none` is the control: the
same rounds without outages. Lease, sweeps and retries are shortened as in tests/test_fault_run.py
so a round recovers in seconds.

What it found (2026-12-04, 8 rounds of 100 turns, 4 s outages, load average 2-5 from other runs):
without outages the RSS rose 529 → 544 MB after the first round, by 5, 3, 2, 2, 2, 1, 0 MB; with
outages (PostgreSQL and Redis in turn) 561 → 584 MB, by 7, 5, 4, 2, 3, 1, 1 MB (a 10-round run:
541 → 566). A full collection frees nothing: the growth is what the worker keeps. Most of it is a
high-water mark: the threads pool starts a thread per task in flight and never ends one (110-130
after the first round, at most --concurrency), and with them the allocator's per-thread arenas.
What tracemalloc saw grow from round 1 to round 8 was about 3.5 MB of Python objects: 2.3 MB of
source lines (linecache: the files in the tracebacks Celery logs, bounded by the code), and the
messages a Redis cut left unacknowledged. Those are the leak: each Redis outage keeps the broken
connection's channel, its redis clients and the task messages it had delivered (50-90 a cut here,
about one per turn in flight) alive for good. Part of what held them was the event loop (kombu
never unregisters a closed transport: 19 channels alive after two cuts, 10 with the fix in
asixto/broker.py); the rest was multiprocessing's module-wide registry of exit-time finalizers
(found with `--holders kombu.transport.virtual.base.Message --roots`, not a running function's
variable as first thought): kombu registers every channel's QoS there and cancels it as the channel
closes, and with Redis gone a channel's close raises before that. asixto/broker.py now lets go
of such a channel. Then (8 rounds, a Redis cut in each, load average 5-8 from other runs): 1
message alive at the end instead of 663, and from round 2 on Python's allocated blocks stay flat
(1.594 → 1.602 million; before the fix 1.604 → 1.674), but the RSS still rises about 1 MB a round
(517, 524, 526, 527, 529, 530, 531, 531 MB; before: 561, 565, 568, 570, 571, 572, 573, 573): the
messages were a few MB at most, and the rest of the rise is not Python objects (threads started,
86 → 107, and the allocator's arenas). A PostgreSQL outage round grows about as much as a round
without outage.

Not covered: a worker killed (SIGKILL) or outages longer than the pool's 30 s timeout, stdio MCP
servers (their sessions live in the worker), webhooks and event streams, more than one tenant,
messages other than one text (numbered per poster thread, so the routing caches see repeats), the
prefork pool, and hours of traffic (rounds take about half a minute each). Database of its own:
asixto_bench_worker_memory (recreated); Redis from REDIS_URL."""

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

os.environ.setdefault("ASIXTO_ALLOW_PRIVATE_HOSTS", "1")  # the stand-ins are on loopback (M2)

from _django import ROOT, setup  # noqa: E402
from _live_turns import index_catalog  # noqa: E402
from _turns import example_server, model_server, process, tenant_with_agent  # noqa: E402

# As tests/test_fault_run.py: a turn cut short by a fault runs again after 2 s, a dead lease is
# taken over within seconds.
FAST = {"ASIXTO_TURN_LEASE_SECONDS": "10", "ASIXTO_TURN_LEASE_RENEW_SECONDS": "2", "ASIXTO_TURN_RETRY_SECONDS": "2",
        "ASIXTO_STALLED_SWEEP_SECONDS": "2", "ASIXTO_WEBHOOK_SWEEP_SECONDS": "2", "ASIXTO_TURN_PICKUP_SECONDS": "5"}
MB = 1024 * 1024


def post_turns(tenant, count: int, threads: int = 4):
    from django.db import connection
    from django_tenants.utils import tenant_context

    from runtime.channel import conversation_start, message_post

    def post(n):
        try:
            with tenant_context(tenant):
                for i in range(n):
                    conversation = conversation_start(data={"channel_kind": "chat", "channel_name": "bench", "language": "es"})
                    message_post(conversation=conversation, text=f"¿Tienen routers? {i}")
        finally:
            connection.close()

    posters = [threading.Thread(target=post, args=(count // threads + (i < count % threads),)) for i in range(threads)]
    for thread in posters:
        thread.start()
    for thread in posters:
        thread.join()


class Probe:
    """The benchmark's side of bench/_memory_probe.py."""

    def __init__(self, directory: Path):
        self.directory, self.asked = directory, 0

    def ask(self, *, trim: bool, baseline: bool = False, timeout: float = 300) -> dict:
        """`baseline`: the growth printed at the end is counted from this answer."""
        self.asked += 1
        (self.directory / f"ask-{self.asked}").write_text(" ".join(["trim"] * trim + ["baseline"] * baseline))
        answer = self.directory / f"answer-{self.asked}.json"
        deadline = time.monotonic() + timeout
        while not answer.exists():
            if time.monotonic() > deadline:
                raise SystemExit("the worker's memory probe did not answer")
            time.sleep(0.2)
        return json.loads(answer.read_text())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--faults", default="postgres,redis", help="cycled over the rounds: postgres, redis, none")
    parser.add_argument("--turns", type=int, default=100, help="turns posted each round")
    parser.add_argument("--outage", type=float, default=4, help="seconds each fault lasts")
    parser.add_argument("--idle", type=float, default=10, help="seconds after a round before the worker is asked")
    parser.add_argument("--trim", action="store_true", help="the worker calls malloc_trim(0) after each round's collection")
    parser.add_argument("--tracemalloc", type=int, default=0, metavar="FRAMES", help="trace the worker's allocations")
    parser.add_argument("--holders", metavar="MODULE.TYPE", help="print what holds the last live object of this type")
    parser.add_argument("--roots", action="store_true", help="with --holders: what keeps that object alive (costly)")
    parser.add_argument("--concurrency", type=int, default=200, help="the worker's threads (./run: 200)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a round may take to finish its turns")
    args = parser.parse_args()
    faults = [fault.strip() for fault in args.faults.split(",")]
    assert set(faults) <= {"postgres", "redis", "none"}, faults

    setup()
    import psutil
    import psycopg
    from django.conf import settings
    from django.db import connection

    from tests.support.tcp_proxy import TcpProxy

    database = settings.DATABASES["default"]
    redis_url = settings.REDIS_URL
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-memory-")))
        model_url = stack.enter_context(model_server(delay=0.3, tool_calls=1))
        mcp_url = stack.enter_context(example_server())
        tenant = tenant_with_agent(slug="bench-memory", model_url=model_url, mcp_url=mcp_url, iteration_limit=3)
        tenant.turns_in_flight_limit, tenant.messages_per_minute = 1_000_000, 1_000_000
        tenant.save(update_fields=["turns_in_flight_limit", "messages_per_minute"])
        index_catalog(tenant)  # routing reads every message, as in production once the sync's task ran
        schema = tenant.schema_name
        connection.close()
        proxies = {"postgres": stack.enter_context(TcpProxy(int(database["PORT"] or 5432), database["HOST"] or "127.0.0.1")),
                   "redis": stack.enter_context(TcpProxy(int(redis_url.rsplit(":", 1)[1].split("/")[0])))}
        proxied = {**FAST, "DATABASE_URL": os.environ["DATABASE_URL"].replace(
                       f":{database['PORT'] or 5432}/", f":{proxies['postgres'].port}/"),
                   "REDIS_URL": f"redis://127.0.0.1:{proxies['redis'].port}/{redis_url.rsplit('/', 1)[1]}"}
        assert proxied["DATABASE_URL"] != os.environ["DATABASE_URL"], "the database URL names no port"
        bench_path = os.pathsep.join([str(ROOT / "bench"), str(ROOT)])
        stack.enter_context(process([sys.executable, "-m", "celery", "-A", "asixto", "beat", f"--schedule={scratch / 'beat'}", "--loglevel=WARNING"],
                                    env={**proxied, "PYTHONPATH": bench_path}, what="the beat"))
        probe = Probe(scratch)
        worker = stack.enter_context(process(
            [sys.executable, "-m", "celery", "-A", "asixto", "worker", "--loglevel=WARNING", "--pool", "threads", f"--concurrency={args.concurrency}"],
            env={**proxied, "DB_POOL_MAX_SIZE": "20", "DJANGO_SETTINGS_MODULE": "worker_settings", "PYTHONPATH": bench_path,
                 "BENCH_MEMORY_PROBE": str(scratch), "BENCH_MEMORY_HOLDERS": args.holders or "",
                 "BENCH_MEMORY_ROOTS": "1" if args.roots else "", "BENCH_TRACEMALLOC": str(args.tracemalloc)},
            what="the Celery worker"))
        watcher = stack.enter_context(psycopg.connect(os.environ["DATABASE_URL"], autocommit=True))

        def counts():
            return dict(watcher.execute(f'SELECT status, count(*) FROM "{schema}".runtime_turn GROUP BY status').fetchall())

        def wait_finished(what, timeout):
            deadline, peak = time.monotonic() + timeout, 0
            while True:
                peak = max(peak, psutil.Process(worker.pid).memory_info().rss)
                now = counts()
                if not now.get("queued", 0) + now.get("running", 0):
                    return now, peak
                if time.monotonic() > deadline or worker.poll() is not None:
                    raise SystemExit(f"{what}: turns still unfinished after {timeout:g} s ({now}); worker exit {worker.poll()}")
                time.sleep(0.5)

        # Warm-up: a few turns, so imports, the pool and the first threads are there before the first figure.
        post_turns(tenant, 5, threads=1)
        wait_finished("warm-up", args.timeout)
        time.sleep(args.idle)
        start = probe.ask(trim=args.trim)
        load_before = open("/proc/loadavg").read().split()[:3]
        print(f"worker: celery --pool threads --concurrency {args.concurrency}, database pool 20; {args.turns} turns a round "
              f"(1 tool call, 3 model requests each); outages of {args.outage:g} s; {args.idle:g} s idle before each reading"
              + (f"; tracemalloc with {args.tracemalloc} frames" if args.tracemalloc else ""))
        print(f"after warm-up: RSS {start['rss'] / MB:.0f} MB, after gc {start['rss_after_gc'] / MB:.0f} MB"
              + (f", after trim {start['rss_after_trim'] / MB:.0f} MB" if args.trim else "")
              + f"; threads {start['threads']}, allocated blocks {start['allocated_blocks']}, objects {start['objects']}")
        print("round fault     done failed | RSS at end  peak | idle: RSS  after gc" + ("  after trim" if args.trim else "")
              + " | threads  blocks   objects")
        before = counts()
        answers = []
        for number in range(1, args.rounds + 1):
            fault = faults[(number - 1) % len(faults)]
            post_turns(tenant, args.turns)
            if fault != "none":
                deadline = time.monotonic() + 60
                while counts().get("running", 0) < args.turns // 4 and time.monotonic() < deadline:
                    time.sleep(0.1)
                proxies[fault].down()
                time.sleep(args.outage)
                proxies[fault].up()
            after, peak = wait_finished(f"round {number}", args.timeout)
            at_end = psutil.Process(worker.pid).memory_info().rss
            time.sleep(args.idle)
            # From the end of the first round: its threads, pool and caches are there, what grows after is in question.
            answer = probe.ask(trim=args.trim, baseline=number == 1)
            answers.append(answer)
            done, failed = (after.get(s, 0) - before.get(s, 0) for s in ("done", "failed"))
            before = after
            print(f"{number:>5} {fault:<9} {done:>4} {failed:>6} | {at_end / MB:>8.0f} {peak / MB:>5.0f} | "
                  f"{answer['rss'] / MB:>9.0f} {answer['rss_after_gc'] / MB:>9.0f}"
                  + (f" {answer['rss_after_trim'] / MB:>11.0f}" if args.trim else "")
                  + f" | {answer['threads']:>7} {answer['allocated_blocks']:>7} {answer['objects']:>9}", flush=True)
            if number > 1:
                print("      grown since the round before: "
                      + ", ".join(f"{name} {count:+d}" for name, count in answer["types_grown_since_last"]), flush=True)
        load_after = open("/proc/loadavg").read().split()[:3]
        errors = watcher.execute(f'SELECT error_code, count(*) FROM "{schema}".runtime_turn WHERE status = %s GROUP BY 1',
                                 ["failed"]).fetchall()
    last = answers[-1]
    if errors:
        print(f"failed turns by error: {dict(errors)}")
    print("live objects grown since the end of round 1 (type: count): "
          + ", ".join(f"{name}: {count}" for name, count in last["types_grown"][:10]) or "none")
    for stat in last.get("traced_grown", []):
        print(f"  {stat['size_diff'] / 1024:+.0f} KiB in {stat['count_diff']:+d} blocks")
        print("      " + "\n      ".join(stat["where"]))
    if last.get("holders"):
        count, *samples = last["holders"]
        print(f"{args.holders}: {count} alive; what holds the last {len(samples)}:")

        def tree(holders, depth=1):
            for label, above in holders:
                print("  " * depth + label)
                tree(above, depth + 1)

        for sample in samples:
            tree(sample)
    if args.roots and last.get("holders", [0])[0] and not last.get("roots"):
        print("what kept it: nothing any more (it was let go of while the worker was answering)")
    for root in last.get("roots", []):
        print(f"kept alive from {root['root']}:\n    " + "\n    -> ".join(root["chain"]))
        for frame in root["frames"]:
            print(f"    (a variable of {frame})")
    print(f"load average before / after: {' '.join(load_before)} / {' '.join(load_after)}")


if __name__ == "__main__":
    main()
