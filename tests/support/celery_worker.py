"""A real Celery worker in a child process, for tests that must kill one mid-task:

    with worker_process(visibility_timeout=2) as process: ...   # process.kill() to simulate a crash
    with run_script_process("worker", log) as process: ...     # the worker or beat as `./run` starts it

It runs the project's app with the threads pool on the tests' database and Redis database. A
short Redis visibility timeout makes a later worker take back what a killed one left unacked.

The worker answers one task of the tests' own, `tests.broker_objects` (`broker_objects`): after a
full garbage collection, how many broker messages, channels and transports it keeps, and how many
of those channels belong to a connection that is closed (issue 19, tests/test_broker_restart.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import psutil

from tests.support.web_servers import ROOT, _database_url, process_stop


def main():
    import warnings

    import django
    from celery.exceptions import SecurityWarning

    warnings.filterwarnings("ignore", category=SecurityWarning)  # CI runs as root; tasks are JSON only

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from asixto.celery import app

    app.conf.broker_transport_options = {"visibility_timeout": float(os.environ.get("TEST_VISIBILITY_TIMEOUT", 3600))}
    app.task(name=BROKER_OBJECTS_TASK)(_broker_objects)
    without = os.environ.get("TEST_WITHOUT", "gossip mingle heartbeat").split()
    app.worker_main(["worker", "--pool", "threads", "--concurrency", os.environ.get("TEST_CONCURRENCY", "4"),
                     "--loglevel", os.environ.get("TEST_LOGLEVEL", "WARNING"), *(f"--without-{name}" for name in without)])


BROKER_OBJECTS_TASK = "tests.broker_objects"


def _broker_objects() -> dict:
    """What the worker keeps of its broker connections (this task's own message included)."""
    import gc

    from kombu.transport.virtual.base import Channel, Message, Transport

    gc.collect()
    alive = [thing for thing in gc.get_objects() if isinstance(thing, Message | Channel | Transport)]
    channels = [thing for thing in alive if isinstance(thing, Channel)]
    return {"messages": sum(isinstance(thing, Message) for thing in alive), "channels": len(channels),
            "transports": sum(isinstance(thing, Transport) for thing in alive),
            "dead_channels": sum(channel.closed or channel.connection is None or channel.connection.client is None
                                 for channel in channels)}


def broker_objects(timeout: float) -> dict:
    """Asks the worker started by `worker_process` what `_broker_objects` counts."""
    from asixto.celery import app

    return app.send_task(BROKER_OBJECTS_TASK).get(timeout=timeout)


@contextmanager
def worker_process(*, visibility_timeout: float = 3600, concurrency: int = 4, loglevel: str = "WARNING",
                   stderr=None, own_group: bool = False, without=("gossip", "mingle", "heartbeat"), **env):
    """`stderr`: a file for the worker's log (default: the test's own stderr); `own_group`: in a
    new session (its own process group, as on another machine), all of it stopped at the end;
    `without`: the worker's parts left out (`--without-…`; `./run` leaves none out)."""
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": _database_url(),
               "DB_CONN_MAX_AGE": "0", "TEST_VISIBILITY_TIMEOUT": str(visibility_timeout),
               "TEST_CONCURRENCY": str(concurrency), "TEST_LOGLEVEL": loglevel, "TEST_WITHOUT": " ".join(without),
               **{k: str(v) for k, v in env.items()}}
    # The banner goes nowhere; warnings and errors still reach the test's output (stderr).
    process = subprocess.Popen([sys.executable, "-m", "tests.support.celery_worker"], cwd=ROOT, env=environ,
                               stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=own_group)
    try:
        yield process
    finally:
        process_stop(process, own_group=own_group, grace=20)


def run_script_command(kind: str) -> str:
    """The shell command `./run` starts the Celery `kind` ("worker", "beat") with, as written there."""
    script = (ROOT / "run").read_text().replace("\\\n", " ")  # continued lines as one
    line = next(line for line in script.splitlines() if re.search(rf"^[^#]*\bcelery\b.*\b{kind}\b", line))
    return line.split(" &")[0].strip()


def group_members(pgid: int) -> list[psutil.Process]:
    """The live processes of process group `pgid` (zombies waiting to be reaped are not)."""
    members = []
    for process in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(process.pid) == pgid and process.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(process)
        except (ProcessLookupError, psutil.Error):
            pass
    return members


@contextmanager
def run_script_process(kind: str, log: Path, *, loglevel: str = "DEBUG", **env):
    """The Celery `kind` started with `./run`'s own command line (plus `--loglevel`, and for beat a
    schedule file beside `log`), on the tests' database and Redis, in a session of its own (as on
    another host); its log goes to `log`. The whole group is stopped at the end."""
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": _database_url(),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               **{k: str(v) for k, v in env.items()}}
    extra = f" --loglevel={loglevel}" + (f" --schedule={log.with_suffix('.schedule')}" if kind == "beat" else "")
    with log.open("w") as output:
        process = subprocess.Popen(["bash", "-c", f"{run_script_command(kind)}{extra}"], cwd=ROOT, env=environ,
                                   stdout=subprocess.DEVNULL, stderr=output, start_new_session=True)
    try:
        yield process
    finally:
        process_stop(process, own_group=True, grace=20)


if __name__ == "__main__":
    main()
