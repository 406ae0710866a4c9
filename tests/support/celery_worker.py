"""A real Celery worker in a child process, for tests that must kill one mid-task:

    with worker_process(visibility_timeout=2) as process: ...   # process.kill() to simulate a crash

It runs the project's app with the threads pool on the tests' database and Redis database. A
short Redis visibility timeout makes a later worker take back what a killed one left unacked."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

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
    app.worker_main(["worker", "--pool", "threads", "--concurrency", os.environ.get("TEST_CONCURRENCY", "4"),
                     "--loglevel", os.environ.get("TEST_LOGLEVEL", "WARNING"), "--without-gossip", "--without-mingle", "--without-heartbeat"])


@contextmanager
def worker_process(*, visibility_timeout: float = 3600, concurrency: int = 4, loglevel: str = "WARNING",
                   stderr=None, own_group: bool = False, **env):
    """`stderr`: a file for the worker's log (default: the test's own stderr); `own_group`: in a
    new session (its own process group, as on another machine), all of it stopped at the end."""
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": _database_url(),
               "DB_CONN_MAX_AGE": "0", "TEST_VISIBILITY_TIMEOUT": str(visibility_timeout),
               "TEST_CONCURRENCY": str(concurrency), "TEST_LOGLEVEL": loglevel, **{k: str(v) for k, v in env.items()}}
    # The banner goes nowhere; warnings and errors still reach the test's output (stderr).
    process = subprocess.Popen([sys.executable, "-m", "tests.support.celery_worker"], cwd=ROOT, env=environ,
                               stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=own_group)
    try:
        yield process
    finally:
        process_stop(process, own_group=own_group, grace=20)


if __name__ == "__main__":
    main()
