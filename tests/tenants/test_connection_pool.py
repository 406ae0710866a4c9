"""Database connections are pooled and bounded, and a pooled connection never carries another
tenant's schema (T1).

A threaded server keeps one Django connection per thread; without a bound, 32 concurrent
requests filled PostgreSQL's 100 connections and answered HTTP 500s. Django's psycopg pool
(`DATABASES[...]["OPTIONS"]["pool"]`) bounds each process."""

import threading

from django.conf import settings
from django.db import connection, connections

from tenants.models import Tenant

CEILING = 60


def test_it_pools_connections_with_a_bounded_size_and_no_persistent_ones():
    """T1 (availability): the default database is pooled, bounded, and not persistent (the pool
    refuses CONN_MAX_AGE > 0)."""
    database = settings.DATABASES["default"]
    pool = database["OPTIONS"]["pool"]
    assert 1 <= pool["min_size"] <= pool["max_size"] <= 50
    assert database["CONN_MAX_AGE"] == 0


def test_many_threads_share_at_most_max_size_connections(committed_world, django_db_blocker):
    """T1 (availability): 32 threads querying at once share the pool's connections: PostgreSQL
    sees at most `max_size` sessions of this process, and every query is answered."""
    limit = settings.DATABASES["default"]["OPTIONS"]["pool"]["max_size"]
    backends, errors = [], []
    start = threading.Barrier(32)

    def query():
        try:
            start.wait(CEILING)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid(), pg_sleep(0.2)")
                backends.append(cursor.fetchone()[0])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    with django_db_blocker.unblock():
        threads = [threading.Thread(target=query) for _ in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(CEILING)
    assert errors == [] and len(backends) == 32
    assert len(set(backends)) <= limit


def test_a_pooled_connection_never_carries_another_tenants_schema(committed_world, django_db_blocker):
    """T1: one physical connection (a pool of one) handed to a tenant's request and then back to
    a public one: the public request runs in `public`, though it had set that schema on the same
    connection before and django-tenants sets search_path only when it thinks it changed."""
    alias = "pool_of_one"
    connections.settings[alias] = {
        **connections["default"].settings_dict,
        "OPTIONS": {**connections["default"].settings_dict["OPTIONS"], "pool": {"min_size": 1, "max_size": 1}},
    }
    public, tenant_side = connections.create_connection(alias), connections.create_connection(alias)

    def where(wrapper):
        with wrapper.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid(), current_schema()")
            return cursor.fetchone()

    try:
        with django_db_blocker.unblock():
            public.set_schema_to_public()
            first_pid, first_schema = where(public)
            public.close()  # back to the pool, search_path "public"

            tenant = Tenant.objects.get(pk=committed_world.tenant.pk)
            tenant_side.set_tenant(tenant)
            tenant_pid, tenant_schema = where(tenant_side)
            tenant_side.close()  # back to the pool, search_path the tenant's

            again_pid, again_schema = where(public)  # same wrapper, schema never changed
            public.close()
    finally:
        public.close_pool()
        del connections.settings[alias]
    assert first_pid == tenant_pid == again_pid  # one physical connection throughout
    assert (first_schema, tenant_schema) == ("public", tenant.schema_name)
    assert again_schema == "public"
