"""ASIXTO_LOG_FORMAT=json (issue 21): every log line of the web app and of a worker is one JSON
object with time, level, logger and message, the tenant, turn and trace id when known, and the
exception type and traceback (one string) for errors. The default stays text. The periodic
sweeps' routine lines are not INFO (issue 20)."""

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

import httpx
from django_tenants.utils import schema_context

from asixto import log_context
from tests.support.celery_worker import worker_process
from tests.support.web_servers import ROOT, _database_url, wsgi_server

CEILING = 120  # seconds for a worker to start and run two tasks on a loaded machine

WEB_SCRIPT = """
import logging, sys
import django
django.setup()
from django.test import Client
domain, channel_key = sys.argv[1:3]
# A refusal: Django's one warning line, in the tenant's context, under the caller's request id.
Client(HTTP_HOST=domain, headers={"Authorization": f"Bearer {channel_key}", "X-Request-ID": "req-0123456789"}).get("/api/v1/users")
try:
    raise ValueError("boom")
except ValueError:
    logging.getLogger("asixto.check").exception("it failed\\non two lines")
"""


def _json_lines(text):
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, "no log line at all"
    entries = []
    for line in lines:
        entry = json.loads(line)  # every line, or the test fails here
        assert {"time", "level", "logger", "message"} <= entry.keys(), entry
        entries.append(entry)
    return entries


def _web_log(world, log_format):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": _database_url(),
           "ASIXTO_LOG_FORMAT": log_format}
    result = subprocess.run([sys.executable, "-c", WEB_SCRIPT, world.domain, world.channel_key], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_it_writes_every_web_line_as_json_with_its_context(committed_world):
    entries = _json_lines(_web_log(committed_world, "json"))
    refusal = next(entry for entry in entries if entry["logger"] == "django.request")
    assert refusal["level"] == "WARNING" and refusal["message"] == "Forbidden: /api/v1/users", refusal
    assert refusal["tenant"] == committed_world.tenant.schema_name and refusal["trace_id"] == "req-0123456789"
    assert "exc" not in refusal and "turn" not in refusal
    error = next(entry for entry in entries if entry["logger"] == "asixto.check")
    assert error["level"] == "ERROR" and error["message"] == "it failed\non two lines"
    assert error["exc_type"] == "ValueError" and error["exc"].startswith("Traceback") and error["exc"].endswith("ValueError: boom")


def test_it_writes_every_line_of_the_web_server_as_json(committed_world):
    """gunicorn with the project's configuration: its own lines, its access log and the app's."""
    with tempfile.TemporaryFile("w+") as log:
        with wsgi_server(threads=2, project_config=True, log_level="info", output=log, ASIXTO_LOG_FORMAT="json",
                         WEB_ACCESS_LOG="-") as url:
            assert httpx.get(f"{url}/healthz", headers={"Host": "localhost"}, timeout=30).status_code == 200
            refused = httpx.get(f"{url}/api/v1/users", timeout=30, headers={
                "Host": committed_world.domain, "Authorization": f"Bearer {committed_world.channel_key}"})
            assert refused.status_code == 403
        log.seek(0)
        entries = _json_lines(log.read())
    loggers = {entry["logger"] for entry in entries}
    assert {"gunicorn.error", "gunicorn.access", "django.request"} <= loggers, loggers
    refusal = next(entry for entry in entries if entry["logger"] == "django.request")
    assert refusal["tenant"] == committed_world.tenant.schema_name and len(refusal["trace_id"]) == 32


def test_it_keeps_text_lines_by_default(committed_world):
    text = _web_log(committed_world, "")
    assert "Forbidden: /api/v1/users" in text and "Traceback" in text
    assert not text.lstrip().startswith("{")


def _turn_done(log, turn_id):
    log.seek(0)
    return any(turn_id in line and "succeeded" in line for line in log)


def test_it_writes_every_worker_line_as_json_and_keeps_the_sweeps_quiet(committed_world):
    """Issue 21 and issue 20: a task's lines carry its tenant, its turn and the trace id of what
    queued it; the webhook sweep, sent every 30 s, leaves no INFO line."""
    from runtime.tasks import turn_run, webhook_outbox_sweep

    turn_id = str(uuid.uuid4())  # no such turn: the runner finds nothing to claim and returns
    with tempfile.TemporaryFile("w+") as log, worker_process(concurrency=1, loglevel="INFO", stderr=log,
                                                             ASIXTO_LOG_FORMAT="json"):
        log_context.request_started(request_id="trace-for-the-worker")
        webhook_outbox_sweep.delay()
        with schema_context(committed_world.tenant.schema_name):
            turn_run.delay(turn_id)
        deadline = time.monotonic() + CEILING
        while not _turn_done(log, turn_id) and time.monotonic() < deadline:
            time.sleep(0.5)
        log.seek(0)
        text = log.read()
    entries = _json_lines(text)
    received = [entry for entry in entries if "turn_run" in entry["message"] and "received" in entry["message"]]
    assert received and received[0]["level"] == "INFO", text[-3000:]  # routine lines of other tasks stay INFO
    done = [entry for entry in entries if "turn_run" in entry["message"] and "succeeded" in entry["message"]]
    assert done, text[-3000:]
    assert done[0]["tenant"] == committed_world.tenant.schema_name and done[0]["turn"] == turn_id
    assert done[0]["trace_id"] == "trace-for-the-worker"
    assert not [entry for entry in entries if "webhook_outbox_sweep" in entry["message"]], text[-3000:]
