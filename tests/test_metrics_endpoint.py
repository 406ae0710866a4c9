"""Who may read `/metrics` (issue 21): only the platform's own domain, only with metrics on, and
only with the bearer token when one is set."""

from django.test import Client

from tests.support.metrics import scrape

TOKEN = "metrics-token-0123456789"


def test_it_is_not_found_while_metrics_are_off(db, settings):
    """Issue 21: off by default; the URL answers 404 as if it did not exist."""
    settings.ASIXTO_METRICS = False
    assert Client(HTTP_HOST="localhost").get("/metrics").status_code == 404
    assert Client(HTTP_HOST="127.0.0.1").get("/metrics").status_code == 404


def test_it_is_not_found_on_a_tenants_domain(alpha, settings):
    """Issue 21, T1: a tenant's domain has no metrics (they are the whole platform's)."""
    settings.ASIXTO_METRICS = True
    assert Client(HTTP_HOST=alpha.domain).get("/metrics").status_code == 404


def test_it_serves_the_platform_domain_in_prometheus_text(db, settings):
    """Issue 21: on the platform's domain (localhost and 127.0.0.1 in development), the text
    format, with the dependencies checked at scrape time."""
    settings.ASIXTO_METRICS = True
    for host in ("localhost", "127.0.0.1"):
        found = scrape(host=host)
        assert found.value("asixto_up", dependency="postgres") == 1
        assert found.value("asixto_up", dependency="redis") == 1
        assert "asixto_queue_depth" in found.names() and "asixto_tools" in found.names()


def test_a_token_is_required_when_one_is_set(db, settings):
    """Issue 21: with ASIXTO_METRICS_TOKEN, 401 without it or with another one (and a Bearer
    challenge); 200 with it."""
    settings.ASIXTO_METRICS, settings.ASIXTO_METRICS_TOKEN = True, TOKEN
    for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": f"Basic {TOKEN}"},
                    {"Authorization": f"Bearer {TOKEN}x"}):
        response = Client(HTTP_HOST="localhost", headers=headers).get("/metrics")
        assert response.status_code == 401, headers
        assert response["WWW-Authenticate"].startswith("Bearer") and b"asixto_" not in response.content
    assert scrape(token=TOKEN).value("asixto_up", dependency="redis") == 1


def test_only_get_is_answered(db, settings):
    """Issue 21: a scrape reads; anything else is 405."""
    settings.ASIXTO_METRICS = True
    assert Client(HTTP_HOST="localhost").post("/metrics").status_code == 405
