"""`manage.py worker_health` for process managers (issue 21): exit 0 when a Celery worker answers
a ping in time, 1 with a one-line reason otherwise. Real workers, real broker."""

import os
import socket
import subprocess
import sys
import time

from tests.support.celery_worker import worker_process
from tests.support.outbound import closed_port
from tests.support.web_servers import ROOT, _database_url

CEILING = 120  # seconds for a worker to start on a loaded machine


def _worker_health(*args, **env):
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": _database_url(), **env}
    return subprocess.run([sys.executable, "manage.py", "worker_health", *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=120)


def test_it_fails_with_a_reason_when_no_worker_answers(django_db_setup):
    """Issue 21: no worker on the broker → exit 1 and one line saying so."""
    result = _worker_health("--timeout", "1")
    assert result.returncode == 1, result
    assert result.stdout == ""
    reason = result.stderr.strip()
    assert "\n" not in reason and "no worker answered" in reason.lower(), reason


def test_it_fails_with_a_reason_when_the_broker_is_unreachable(django_db_setup):
    """Issue 21: the broker down is its own reason, without its URL."""
    result = _worker_health("--timeout", "1", REDIS_URL=f"redis://:hunter2@127.0.0.1:{closed_port()}/0")
    assert result.returncode == 1, result
    reason = result.stderr.strip()
    assert "\n" not in reason and "broker" in reason.lower() and "hunter2" not in reason, reason


def test_it_succeeds_when_a_worker_answers_and_checks_one_worker_by_name(django_db_setup):
    """Issue 21: a running worker answers; `--hostname` checks that one only."""
    hostname = f"celery@{socket.gethostname()}"
    with worker_process(concurrency=1):
        deadline = time.monotonic() + CEILING
        while (result := _worker_health("--timeout", "5")).returncode != 0 and time.monotonic() < deadline:
            time.sleep(1)
        assert result.returncode == 0, result
        assert hostname in result.stdout
        named = _worker_health("--timeout", "5", "--hostname", hostname)
        assert named.returncode == 0, named
        other = _worker_health("--timeout", "1", "--hostname", "celery@nowhere")
        assert other.returncode == 1 and "celery@nowhere" in other.stderr, other
