"""Liveness and readiness probes (issue 21): on the platform's own host only, without auth, and
saying nothing about the configuration. The probes with a dependency down are in
tests/test_readiness_dependencies.py (a real gunicorn)."""

import json

import pytest
from django.test import Client


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "localhost:8000"])
def test_it_answers_liveness_on_the_platform_host_without_the_database(host, django_assert_num_queries, db):
    """Issue 21: /healthz is the process being up; it reads nothing."""
    with django_assert_num_queries(0):
        response = Client(HTTP_HOST=host).get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_it_answers_readiness_with_every_dependency_checked(alpha):
    """Issue 21: database, Redis, broker and migrations are each checked and named."""
    response = Client(HTTP_HOST="localhost").get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json() == {"status": "ok", "checks": {
        "database": "ok", "redis": "ok", "broker": "ok", "migrations": "ok"}}


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_it_hides_the_probes_on_a_tenant_domain(alpha, path):
    """T1, issue 21: a tenant's domain has no probe; it answers its own 404."""
    response = Client(HTTP_HOST=alpha.domain).get(path)
    assert response.status_code == 404


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_it_hides_the_probes_from_an_api_key(alpha, path):
    """T1: an API key chooses a tenant on any host; the probes stay the platform's."""
    response = Client(HTTP_HOST=alpha.domain, headers={"Authorization": f"Bearer {alpha.admin_key}"}).get(path)
    assert response.status_code == 404


def test_it_tells_the_probes_nothing_of_the_configuration(alpha, settings):
    """Issue 21: no URL, password or setting in a probe's answer, even when a dependency fails."""
    settings.CELERY_BROKER_URL = "redis://:hunter2-secret@127.0.0.1:1/0"
    body = Client(HTTP_HOST="localhost").get("/readyz").content.decode()
    assert "hunter2" not in body and "127.0.0.1" not in body and "redis://" not in body
    assert json.loads(body)["checks"]["broker"].startswith("error: ")


def test_it_is_not_ready_while_a_migration_is_unapplied(alpha):
    """Issue 21: a server started before `migrate` ran says so, and is ready once it has."""
    import psycopg
    from django.db.migrations.loader import MigrationLoader

    from tests.support.web_servers import _database_url

    app, name = max(node for node in MigrationLoader(None, ignore_no_migrations=True).graph.leaf_nodes()
                    if node[0] == "runtime")
    with psycopg.connect(_database_url(), autocommit=True) as other:  # committed: the probe reads on its own connection
        applied = other.execute("DELETE FROM public.django_migrations WHERE app = %s AND name = %s RETURNING applied",
                                (app, name)).fetchone()[0]
        try:
            response = Client(HTTP_HOST="localhost").get("/readyz")
        finally:
            other.execute("INSERT INTO public.django_migrations (app, name, applied) VALUES (%s, %s, %s)",
                          (app, name, applied))
    assert response.status_code == 503
    assert response.json()["checks"]["migrations"] == "error: 1 unapplied"
    assert Client(HTTP_HOST="localhost").get("/readyz").status_code == 200
