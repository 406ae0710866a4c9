"""Database connections are pooled and bounded, and a pooled connection never carries another
tenant's schema (T1).

A threaded server keeps one Django connection per thread; without a bound, 32 concurrent
requests filled PostgreSQL's 100 connections and answered HTTP 500s. Django's psycopg pool
(`DATABASES[...]["OPTIONS"]["pool"]`) bounds each process."""

import threading
from contextlib import contextmanager

from django.conf import settings
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

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


@contextmanager
def pool_of_one():
    """Two Django connections over one physical connection (a pool of one), as two requests or
    two steps of a turn in turn get it."""
    alias = "pool_of_one"
    connections.settings[alias] = {
        **connections["default"].settings_dict,
        "OPTIONS": {**connections["default"].settings_dict["OPTIONS"], "pool": {"min_size": 1, "max_size": 1}},
    }
    first, second = connections.create_connection(alias), connections.create_connection(alias)
    try:
        yield first, second
    finally:
        first.close()
        second.close()
        first.close_pool()
        del connections.settings[alias]


def schema_and_sets(wrapper) -> tuple[str, int]:
    """The schema a query runs in on `wrapper`, and how many SET search_path it took to get there."""
    with CaptureQueriesContext(wrapper) as queries, wrapper.cursor() as cursor:
        cursor.execute("SELECT current_schema()")
        schema = cursor.fetchone()[0]
    return schema, sum("search_path" in query["sql"] for query in queries)


def test_a_connection_taken_back_for_the_schema_it_has_sends_no_search_path(committed_world, django_db_blocker):
    """P4: a turn gives its connection back before each wait and takes one again after it; the
    physical connection already has the tenant's search_path, so no SET is sent again (there was
    one on every checkout). Another schema, or the first one again, is still set (T1)."""
    with django_db_blocker.unblock(), pool_of_one() as (one, other):
        tenant = Tenant.objects.get(pk=committed_world.tenant.pk)
        one.set_tenant(tenant)
        seen = [schema_and_sets(one)]
        one.close()  # back to the pool
        seen.append(schema_and_sets(one))  # a checkout for the same tenant
        one.close()
        other.set_schema_to_public()
        seen.append(schema_and_sets(other))
        other.close()
        seen.append(schema_and_sets(one))
    assert seen == [(tenant.schema_name, 1), (tenant.schema_name, 0), ("public", 1), (tenant.schema_name, 1)]


def test_a_search_path_set_in_a_transaction_rolled_back_is_set_again(committed_world, django_db_blocker):
    """T1: a SET inside a transaction is undone by its rollback, so it is not taken as the
    connection's: the next checkout sets the schema again and queries run in it."""
    with django_db_blocker.unblock(), pool_of_one() as (one, other):
        tenant = Tenant.objects.get(pk=committed_world.tenant.pk)
        other.set_schema_to_public()
        schema_and_sets(other)
        other.close()  # the session's search_path: public
        one.set_tenant(tenant)
        one.set_autocommit(False)  # a transaction, as atomic() opens one (on this wrapper)
        inside = schema_and_sets(one)
        one.rollback()
        one.set_autocommit(True)
        one.close()
        one.set_tenant(tenant)  # the same tenant, on the connection whose SET was undone
        after = schema_and_sets(one)
    assert inside == (tenant.schema_name, 1) and after == (tenant.schema_name, 1)
