"""What `/metrics` reads at scrape time, and how recording behaves (issue 21): tools by verdict
across tenants, Celery's queue depth, the dependencies' `up`, the tenant label cap, a recording
error that never reaches the operation, and nothing written while metrics are off."""

import logging
import os
import socket

import redis
from django.conf import settings as django_settings
from django.db import connection

from asixto import metrics
from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from tests.runtime.runtime_support import post, register_soporte, run
from tests.support.mcp_servers import serve_asgi
from tests.support.metrics import scrape


def _scrapes_around_a_sync(world, django_db_blocker):
    """A scrape, a committed sync of the example support server (three tools), another scrape."""
    with django_db_blocker.unblock():
        before = scrape()
        with serve_asgi(build_app(SupportDesk())) as url:
            register_soporte(world, url)
        connection.set_schema_to_public()
        return before, scrape()


def test_tools_are_counted_by_verdict_across_tenants(committed_world, django_db_blocker, settings):
    """Issue 21, M5, C: a sync that stores three certified tools adds three to
    `asixto_tools{verdict="certified"}`, read from every tenant's schema at scrape time."""
    settings.ASIXTO_METRICS = True
    before, after = _scrapes_around_a_sync(committed_world, django_db_blocker)
    assert after.delta(before, "asixto_tools", verdict="certified") == 3
    assert after.delta(before, "asixto_tools", verdict="blocked") == 0


def test_a_tenant_past_the_label_cap_is_counted_as_other(committed_world, django_db_blocker, settings):
    """Issue 21: with ASIXTO_METRICS_MAX_TENANTS reached (0 here), a new tenant's sync is counted
    under `other`, and its slug appears in no label."""
    settings.ASIXTO_METRICS, settings.ASIXTO_METRICS_MAX_TENANTS = True, 0
    slug = committed_world.tenant.slug
    before, after = _scrapes_around_a_sync(committed_world, django_db_blocker)
    assert after.delta(before, "asixto_syncs_total", tenant="other", result="ok") == 1
    assert not [sample for sample in after.samples if slug in sample.labels.values()]


def test_the_label_cap_keeps_the_first_tenants():
    """Issue 21: the first `cap` tenants keep their labels (again and again); later ones are `other`."""
    seen = set()
    assert [metrics.tenant_label(slug, seen=seen, cap=2) for slug in ("a", "b", "c", "a", "b", "d")] == [
        "a", "b", "other", "a", "b", "other"]


def test_the_queue_depth_is_celerys_redis_list(db, settings):
    """Issue 21: a message waiting in Celery's default queue is one more in `asixto_queue_depth`."""
    settings.ASIXTO_METRICS = True
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    before = scrape()
    broker.lpush("celery", b"{}")
    try:
        after = scrape()
    finally:
        broker.lrem("celery", 1, b"{}")
    assert after.delta(before, "asixto_queue_depth", queue="celery") == 1


def test_a_redis_that_does_not_answer_is_down_and_the_scrape_still_answers(db, settings):
    """Issue 21: Redis unreachable → `asixto_up{dependency="redis"} 0`, PostgreSQL still 1, and
    no queue depth (nothing to read it from)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    settings.ASIXTO_METRICS = True
    settings.REDIS_URL = settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed}/0"
    found = scrape()
    assert found.value("asixto_up", dependency="redis") == 0
    assert found.value("asixto_up", dependency="postgres") == 1
    assert "asixto_queue_depth" not in found.names()


def test_a_recording_error_is_swallowed_and_logged_once(settings, caplog):
    """Issue 21: metrics never break what they observe: a value the client refuses raises
    nothing, and the error is logged once, not at every call."""
    settings.ASIXTO_METRICS = True
    with caplog.at_level(logging.ERROR, logger="asixto.metrics"):
        metrics.truncated(count="many")
        metrics.truncated(count="many")
    assert [record.getMessage() for record in caplog.records].count(
        "metrics: recording truncated failed (logged once; the operation goes on)") == 1


def _files():
    path = metrics.multiprocess_dir()
    if not os.path.isdir(path):
        return {}
    found = {}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as file:
            found[name] = file.read()
    return found


def test_nothing_is_written_while_metrics_are_off(alpha, settings):
    """Issue 21: off (the default), a turn writes no metrics file; the same turn with metrics on does."""
    settings.ASIXTO_METRICS = False
    before = _files()
    turn = run(alpha, post(alpha, "Hola"))  # no model configured: a failed turn, a model request
    assert turn.status == "failed" and _files() == before
    settings.ASIXTO_METRICS = True
    run(alpha, post(alpha, "Hola otra vez"))
    assert _files() != before
