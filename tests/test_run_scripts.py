"""The set-up scripts: what `./run` and `./manage` connect to (A2: a newcomer's second checkout
must not share the first one's broker), and how `./run`'s processes end together (issue 19)."""

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
import pytest

from tests.support import waiting
from tests.support.celery_worker import group_members, run_script_command
from tests.support.outbound import closed_port
from tests.support.web_servers import _database_url, process_stop

ROOT = Path(__file__).resolve().parent.parent


def services(database, **env):
    """The exports bin/services.py prints for `database`, with the machine's local servers."""
    environment = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL", "ASIXTO_REDIS_DB")}
    environment.update(env)
    printed = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "services.py"), "--database", database, "--no-embedded", "--no-create"],
        env=environment, capture_output=True, text=True, check=True, timeout=120,
    ).stdout
    return dict(line.removeprefix("export ").split("=", 1) for line in printed.splitlines() if line.startswith("export "))


def test_a_second_database_gets_a_redis_database_of_its_own():
    """A2: `./run` with ASIXTO_DATABASE set also gets its own Redis database (never the tests' 15),
    stable from run to run; ASIXTO_REDIS_DB chooses one explicitly."""
    default, second, again = services("asixto"), services("asixto_second"), services("asixto_second")
    assert default["REDIS_URL"].endswith("/0") and default["DATABASE_URL"].endswith("/asixto")
    number = int(second["REDIS_URL"].rsplit("/", 1)[1])
    assert 1 <= number <= 14 and second["REDIS_URL"] == again["REDIS_URL"]
    assert services("asixto_second", ASIXTO_REDIS_DB="9")["REDIS_URL"].endswith("/9")


def test_naming_a_database_without_creating_it_leaves_none_behind():
    """Issue 19: `./run-tests` names the platform's database with --no-create; the tests make their
    own `test_…` databases, so a run leaves no `asixto_…` database on the server."""
    import psycopg

    name = "asixto_never_created"
    exports = services(name)
    assert exports["DATABASE_URL"].endswith(f"/{name}")
    with psycopg.connect(exports["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres", autocommit=True) as server:
        assert server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None


def test_the_python_peers_are_not_installed_again_when_their_pins_are_there(tmp_path):
    """A2, issue 8: ./run-tests keeps `.peers` in sync with requirements-peers.txt; with the pins
    installed it needs no network, even when the stamp is missing (pip would fail: no index)."""
    if not (ROOT / ".peers" / "bin" / "python").exists():
        pytest.skip(".peers is not installed (./run-tests creates it)")
    stamp = ROOT / ".peers" / ".requirements.sha256"
    stamp.unlink(missing_ok=True)
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path)}
    done = subprocess.run(["bash", "-c", "set -euo pipefail; source bin/_peers.sh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "installing" not in done.stderr
    assert stamp.read_text().strip() == subprocess.run(
        ["sha256sum", "requirements-peers.txt"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()[0]


def test_run_starts_a_worker_that_holds_hundreds_of_turns():
    """P4, A2: `./run` starts the turn worker the README recommends: one process with the threads
    pool, 200 turns at once by default, on a bounded pool of at most 20 database connections
    (prefork with two children holds two turns)."""
    script = (ROOT / "run").read_text().replace("\\\n", " ")  # continued lines as one
    worker = next(line for line in script.splitlines() if re.search(r"\bcelery\b.*\bworker\b", line))
    words = shlex.split(worker.split("&")[0])
    values = {word.split("=", 1)[0]: word.split("=", 1)[1] for word in words if "=" in word and not word.startswith("-")}
    assert words[words.index("--pool") + 1] == "threads"
    concurrency = next(word for word in words if word.startswith("--concurrency")).split("=", 1)[1]
    assert int(re.fullmatch(r"\$\{CELERY_CONCURRENCY:-(\d+)\}", concurrency).group(1)) >= 200
    assert 0 < int(re.fullmatch(r"\$\{CELERY_DB_POOL_MAX_SIZE:-(\d+)\}", values["DB_POOL_MAX_SIZE"]).group(1)) <= 20


def test_the_embedded_redis_asks_for_a_password():
    """Issue 19 H1: the Redis `./run` starts when none answers requires the password it generated
    (kept in var/redis/password, mode 0600); a local process without it is refused."""
    import redis

    sys.path.insert(0, str(ROOT / "bin"))
    try:
        import services as setup
    finally:
        sys.path.remove(str(ROOT / "bin"))
    # A port of this test's own (./run's is EMBEDDED_REDIS_PORT): a second copy of the suite, or a
    # running ./run, must not share its server and password file.
    port = closed_port()
    url = setup.embedded_redis_url(port)
    try:
        assert ":" in url.split("@")[0].removeprefix("redis://") and url.endswith(f"@127.0.0.1:{port}/0")
        assert (ROOT / "var" / "redis" / "password").stat().st_mode & 0o077 == 0
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=port).ping()
        assert redis.Redis.from_url(url).ping() is True
    finally:
        with suppress(redis.ConnectionError):
            redis.Redis.from_url(url).shutdown(nosave=True)


SWEEP_PERIOD = 2  # seconds (30 s in production): several periods pass within the test


def run_script_processes(logs: Path, schedule: Path) -> str:
    """The part of `./run` that starts the Celery worker and beat and ends them together, as
    written there: the list of pids, the cleanup trap, the worker and beat lines (each with the line
    that follows it, the pid kept), then `wait -n`. The worker logs to `logs`/worker.log, beat to
    beat.log and keeps `schedule`; the other processes of `./run` are left out."""
    script = (ROOT / "run").read_text().replace("\\\n", " ").splitlines()
    ending = [line for line in script if re.match(r"\s*(pids=\(\)|cleanup\(\)|trap )", line)]
    assert len(ending) == 3, ending
    started = []
    for kind, extra in (("worker", "--loglevel=DEBUG"), ("beat", f"--loglevel=DEBUG --schedule={schedule}")):
        index = next(n for n, line in enumerate(script) if line.strip().startswith(run_script_command(kind)))
        started += [f"{run_script_command(kind)} {extra} 2>{logs / kind}.log &", script[index + 1]]
    return "\n".join([*ending, *started, next(line for line in script if line.strip().startswith("wait -n"))])


@contextmanager
def run_script_started(logs: Path, schedule: Path):
    """`run_script_processes` in a bash of its own session, on the tests' database and Redis, with
    the sweeps every SWEEP_PERIOD seconds; the whole group stopped at the end."""
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": _database_url(),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               "CELERY_CONCURRENCY": "4", "CELERY_DB_POOL_MAX_SIZE": "2",
               "ASIXTO_WEBHOOK_SWEEP_SECONDS": str(SWEEP_PERIOD), "ASIXTO_STALLED_SWEEP_SECONDS": str(SWEEP_PERIOD)}
    logs.mkdir(exist_ok=True)
    for kind in ("worker", "beat"):
        (logs / f"{kind}.log").touch()
    process = subprocess.Popen(["bash", "-c", run_script_processes(logs, schedule)], cwd=ROOT, env=environ,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield process
    finally:
        process_stop(process, own_group=True, grace=20)


def beats_of(schedule: Path) -> list[psutil.Process]:
    """Every live beat process on the machine that keeps `schedule`: this instance's beats."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        words = process.info["cmdline"] or ()
        if "beat" in words and f"--schedule={schedule}" in words and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


def sweeps_run(worker_log: Path) -> Counter:
    """The ids of the webhook sweeps the worker ran (beat sends one every SWEEP_PERIOD), with how often."""
    return Counter(re.findall(r"Task runtime\.tasks\.webhook_outbox_sweep\[([0-9a-f-]+)\] succeeded", worker_log.read_text()))


def test_a_worker_killed_under_run_ends_its_beat_and_a_new_run_has_one(committed_world, tmp_path):
    """Issue 19 (SIGKILL leaked the worker's embedded beat; "the beat runs as its own process, or
    dies with its worker, never orphaned"): `./run` starts beat as a process of its own and, when
    any of its processes ends, stops the others (`wait -n`, then the cleanup trap); it does not
    start a killed worker again. A worker killed with SIGKILL ends that `./run` with a failure and
    its beat with it: no beat of the instance lives on. `./run` started again has exactly one beat,
    and each periodic sweep it sends arrives once: no orphan of the first run sends its own."""
    schedule, first, second = tmp_path / "beat.schedule", tmp_path / "first", tmp_path / "second"
    with run_script_started(first, schedule) as script:
        waiting.wait_for(lambda: len(sweeps_run(first / "worker.log")) >= 2, "two sweeps sent by beat and run", 180)
        assert len(beats_of(schedule)) == 1
        worker = next(process for process in group_members(script.pid) if "worker" in process.cmdline())
        worker.send_signal(signal.SIGKILL)
        # `./run` ends, failing, and takes beat with it (the cleanup trap's SIGTERM).
        waiting.wait_for(lambda: script.poll() is not None, "./run to end after its worker was killed", 120)
        with suppress(TimeoutError):
            waiting.wait_for(lambda: not group_members(script.pid), "the rest of ./run's processes to end", 60)
        left = [" ".join(process.cmdline()) for process in group_members(script.pid)]
    assert script.returncode != 0 and left == [] and beats_of(schedule) == []

    with run_script_started(second, schedule) as script:
        started = time.monotonic()
        waiting.wait_for(lambda: len(sweeps_run(second / "worker.log")) >= 5, "five sweeps of the new run", 240)
        beats = [os.getpgid(process.pid) for process in beats_of(schedule)]
        sent = (second / "beat.log").read_text().count("Sending due task webhook-outbox-sweep")
        seconds = time.monotonic() - started
        swept = sweeps_run(second / "worker.log")
        assert script.poll() is None
    assert beats == [script.pid]
    # Each sweep ran once; every one came from the new run's beat, at most one a period (a beat
    # left from the first run would add one a period of its own). One sent by the first run's beat
    # as its worker died may still wait in the queue.
    assert set(swept.values()) == {1}
    assert len(swept) <= sent + 1 and sent <= seconds / SWEEP_PERIOD + 2, (len(swept), sent, seconds)
