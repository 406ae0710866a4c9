"""Metrics of several processes add up (issue 21): a real gunicorn with two workers and the
project's configuration (bin/gunicorn.conf.py). Tool calls made through the test console are
served by its workers; a reload (HUP) replaces every worker, the new ones serve more calls, and
one scrape counts the calls of all of them. The workers that left are marked dead (`child_exit`):
their live gauges leave the directory, their counters stay."""

import os
import signal

import httpx

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from tests.runtime.runtime_support import register_soporte
from tests.support.mcp_servers import serve_asgi
from tests.support.metrics import parse
from tests.support.outbound import closed_port
from tests.support.waiting import wait_for
from tests.support.web_servers import gunicorn_server
from tools.models import Tool


def _pids(path, prefix):
    return {name.removeprefix(prefix).removesuffix(".db") for name in os.listdir(path) if name.startswith(prefix)}


def _invoke(url, world, tool_id, times):
    for _n in range(times):
        response = httpx.post(f"{url}/api/v1/tools/{tool_id}/invoke", json={"arguments": {"consulta": "router"}},
                              headers={"Authorization": f"Bearer {world.admin_key}"}, timeout=90)
        assert response.status_code == 200 and response.json()["outcome"] == "ok", response.text[:500]


def test_the_counts_of_every_worker_add_up(committed_world, django_db_blocker, tmp_path):
    """Issue 21: 4 calls before a reload and 3 after, on two generations of workers, are 7 in
    one scrape; the replaced workers' live gauge files are gone, their counter files remain."""
    path = tmp_path / "metrics"
    env = {"ASIXTO_METRICS": "1", "PROMETHEUS_MULTIPROC_DIR": str(path)}
    with django_db_blocker.unblock(), serve_asgi(build_app(SupportDesk())) as tool_url:
        register_soporte(committed_world, tool_url)
        with committed_world.schema():
            tool = Tool.objects.get(prefixed_name="soporte__buscar_producto")
        with gunicorn_server(workers=2, threads=2, config=True, env=env) as (url, master):
            _invoke(url, committed_world, tool.pk, 4)
            first = _pids(path, "counter_")
            assert first
            master.send_signal(signal.SIGHUP)  # every worker replaced, gracefully
            # marked dead by child_exit as each one leaves
            wait_for(lambda: not _pids(path, "gauge_livesum_") & first, "the replaced workers marked dead", 120)
            _invoke(url, committed_world, tool.pk, 3)
            scraped = httpx.get(f"{url}/metrics", headers={"Host": "localhost"}, timeout=60)
    assert scraped.status_code == 200, scraped.text[:500]
    found = parse(scraped.text)
    slug = committed_world.tenant.slug
    assert found.value("asixto_tool_calls_total", tenant=slug, server="soporte", outcome="ok", level="read") == 7
    assert found.value("asixto_tool_call_seconds_count") == 7
    assert first < _pids(path, "counter_")  # the new workers counted too, beside the old ones


def test_the_scrape_answers_while_postgresql_is_down(tmp_path):
    """Issue 21: the platform's domain serves `/metrics` without reading the database (tenant
    resolution would), so while PostgreSQL is unreachable the scrape says so:
    `asixto_up{dependency="postgres"} 0`, Redis 1. A tenant's domain still has no metrics."""
    env = {"ASIXTO_METRICS": "1", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    with gunicorn_server(threads=2, database_url=f"postgres://postgres@127.0.0.1:{closed_port()}/nowhere",
                         env=env) as (url, _master):
        scraped = httpx.get(f"{url}/metrics", headers={"Host": "localhost"}, timeout=60)
        tenant = httpx.get(f"{url}/metrics", headers={"Host": "alpha.localhost"}, timeout=60)
    assert scraped.status_code == 200, scraped.text[:500]
    found = parse(scraped.text)
    assert found.value("asixto_up", dependency="postgres") == 0
    assert found.value("asixto_up", dependency="redis") == 1
    assert tenant.status_code != 200 and b"asixto_up" not in tenant.content
