"""Call records survive the end of the process that made them (G9): a normal exit, a Celery
prefork child's `os._exit`, and a worker child that stays alive after its task.

The processes under test run with the record writer's batch window set to an hour, so a record
is in the database only because a flush stored it — not because the writer happened to get
there first."""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from asixto.celery import app
from tests.support.tcp_proxy import TcpProxy
from tools.models import ToolCall

ROOT = Path(__file__).resolve().parents[2]
CEILING = 60  # seconds; a loaded 2-CPU machine starts a Django process in a few


def child_environment():
    settings = connection.settings_dict
    database_url = f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url, "LOG_LEVEL": "WARNING"}


def stored_ids(world, ids):
    with world.schema():
        found = {str(pk) for pk in ToolCall.objects.filter(pk__in=ids).values_list("pk", flat=True)}
    connection.set_schema_to_public()
    return found


@pytest.mark.parametrize("mode", ["normal", "worker-child"])
def test_it_stores_pending_records_when_the_process_ends(committed_world, django_db_blocker, mode):
    """G9: five records still in the writer's queue when the process ends are all stored —
    on a normal exit (atexit) and on a Celery prefork child's exit, which skips atexit
    (`os._exit`) and flushes on `worker_process_shutdown` instead."""
    with django_db_blocker.unblock():
        done = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "support" / "records_exit.py"), committed_world.tenant.schema_name, "5", mode],
            env=child_environment(), cwd=ROOT, capture_output=True, text=True, timeout=CEILING,
        )
        assert done.returncode == 0, done.stderr
        ids = json.loads(done.stdout.strip().splitlines()[-1])
        assert len(ids) == 5
        assert stored_ids(committed_world, ids) == set(ids)


def test_records_made_during_a_database_outage_are_stored_when_it_returns(committed_world, django_db_blocker):
    """G9, issue 19: the writer's database goes away (connections cut, new ones refused) while records
    wait in its queue; the flush finds no database, the records are kept, and once the database answers
    again every one of them is stored (before, two failed tries dropped the batch)."""
    settings = connection.settings_dict
    with TcpProxy(int(settings["PORT"] or 5432), settings["HOST"] or "127.0.0.1") as proxy, django_db_blocker.unblock():
        environment = {**child_environment(), "DB_POOL_TIMEOUT": "2",
                       "DATABASE_URL": f"postgres://{settings['USER']}@127.0.0.1:{proxy.port}/{settings['NAME']}"}
        child = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "support" / "records_exit.py"), committed_world.tenant.schema_name, "5",
             "outage"], env=environment, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
        try:
            ids = json.loads(child.stdout.readline())
            proxy.down()
            child.stdin.write("flush\n")
            child.stdin.flush()
            said = []
            for line in child.stderr:  # the writer says so when it finds no database (or drops the records)
                said.append(line)
                if "cannot be reached" in line or "could not store" in line:
                    break
            assert any("cannot be reached" in line for line in said), "".join(said)
            proxy.up()
            assert child.stdout.readline().strip() == "stored"
            assert child.wait(CEILING) == 0
        finally:
            child.kill()
            child.wait()
    assert len(ids) == 5 and stored_ids(committed_world, ids) == set(ids)


def wait_until(condition, what):
    deadline = time.monotonic() + CEILING
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} within {CEILING} s")


def test_a_real_prefork_worker_stores_records_at_the_end_of_each_task(committed_world, django_db_blocker):
    """G9: on a real worker (prefork, one child that ends after two tasks): the records of the
    first task are stored while its child is still alive (flushed at the end of the task),
    and those of the second survive the child's `os._exit`."""
    queue = f"records-{uuid.uuid4().hex[:8]}"
    schema = committed_world.tenant.schema_name
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "records_worker.py"), queue, "--max-tasks-per-child=2"],
        env=child_environment(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        with django_db_blocker.unblock():
            first = app.send_task("tests.support.records_tasks.make_call_records", args=[schema, 5], queue=queue).get(timeout=CEILING)
            wait_until(lambda: stored_ids(committed_world, first["ids"]) == set(first["ids"]), "the first task's records were not stored")
            assert Path(f"/proc/{first['pid']}").exists(), "the child ended: the records may come from its exit, not the task's end"

            second = app.send_task("tests.support.records_tasks.make_call_records", args=[schema, 5], queue=queue).get(timeout=CEILING)
            assert second["pid"] == first["pid"]
            wait_until(lambda: not Path(f"/proc/{second['pid']}").exists(), "the child did not exit after its second task")
            assert stored_ids(committed_world, second["ids"]) == set(second["ids"])
    finally:
        worker.terminate()
        try:
            worker.wait(CEILING)
        except subprocess.TimeoutExpired:  # pragma: no cover
            worker.kill()
            worker.wait()
