"""Shared fixtures: two committed tenants with named people and keys, API and dashboard clients.

Tenants are created once per session (a schema takes ~0.5 s) and committed; each test runs in a
transaction that is rolled back, so what a test writes disappears while the tenants stay."""

import shutil
import uuid
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
import pytest_django.fixtures as pytest_django_fixtures
from django.db import connection
from django.test import Client
from django_tenants.utils import schema_context, tenant_context

from accounts.models import User
from tenants.models import ApiKey, Tenant
from tenants.services import api_key_create, tenant_create

PASSWORD = "correct-horse-battery"


def pytest_sessionstart(session):
    """This session's call journal and metrics files start empty (tests/settings.py chose them).
    Only here, in the pytest process: a child that imports the settings must never empty them."""
    from django.conf import settings

    for path in getattr(settings, "SESSION_DIRS", ()):
        shutil.rmtree(path, ignore_errors=True)


def _databases_for_test(test, _original=pytest_django_fixtures._get_databases_for_test):
    # pytest-django creates the test database only for tests that ask for `db`. Tests on
    # committed data (`committed_world`: a live server thread, a Celery worker) must not run in
    # a transaction, yet need the test database too — without this, run alone, they would
    # reach the development database.
    databases, serialized = _original(test)
    if not databases and COMMITTED_FIXTURES & set(getattr(test, "fixturenames", ())):
        return ("default",), False
    return databases, serialized


pytest_django_fixtures._get_databases_for_test = _databases_for_test
COMMITTED_FIXTURES = {"committed_world", "committed_module_world"}


@dataclass
class World:
    """One tenant as the tests see it: its domain, keys and dashboard people."""

    tenant: Tenant
    domain: str
    admin_key: str
    channel_key: str
    channel_integration: uuid.UUID = None  # the channel key's integration: the conversations it sees
    admin_username: str = "ana"  # tenant admin
    support_username: str = "sam"  # support staff, read only

    def api(self, key=None):
        """A client that authenticates with `key` (default: this tenant's admin key)."""
        key = self.admin_key if key is None else key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return Client(headers=headers)

    def dashboard(self, username=None):
        """A client on this tenant's domain, signed in as `username` (or anonymous)."""
        client = Client(HTTP_HOST=self.domain)
        if username:
            assert client.post("/login/", {"username": username, "password": PASSWORD}).status_code == 302
        return client

    def schema(self):
        return tenant_context(self.tenant)


def build_world(slug):
    created = tenant_create(slug=slug, name=f"{slug.title()} SA")
    tenant = created.tenant
    with schema_context(tenant.schema_name):
        User.objects.create_user("ana", password=PASSWORD, role=User.Role.ADMIN)
        User.objects.create_user("sam", password=PASSWORD, role=User.Role.SUPPORT)
    key, channel_key = api_key_create(tenant=tenant, name="chat", scope=ApiKey.Scope.CHANNEL)
    return World(tenant=tenant, domain=created.domain, admin_key=created.admin_api_key, channel_key=channel_key,
                 channel_integration=key.integration)


@pytest.fixture(scope="session")
def worlds(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        return {"alpha": build_world("alpha"), "beta": build_world("beta")}


@pytest.fixture(scope="session", autouse=True)
def _stop_background_writers(django_db_setup):
    # Torn down before the test database is dropped: the call-record writer holds a connection.
    yield
    from tools.gateway import records

    records.shutdown()


@pytest.fixture
def _call_records_rolled_back(worlds, django_db_blocker):
    # Call records are written on the record writer's own connection, never in the caller's
    # transaction (G9), so the rollback that ends a test does not take them: delete them.
    yield
    from tools.gateway import records
    from tools.models import ToolCall

    records.flush()
    with django_db_blocker.unblock():
        for world in worlds.values():
            with schema_context(world.tenant.schema_name):
                ToolCall.objects.all().delete()


@pytest.fixture
def alpha(worlds, _call_records_rolled_back, db):
    return worlds["alpha"]


@pytest.fixture
def beta(worlds, _call_records_rolled_back, db):
    return worlds["beta"]


@pytest.fixture(autouse=True)
def _no_stdio_session_outlives_its_test():
    # Live stdio sessions are per process (issue 8): one test's children must not serve the next.
    yield
    from tools.mcp import stdio_pool

    stdio_pool.shutdown()


@pytest.fixture(autouse=True)
def _public_schema_each_test():
    # Requests made by the test client switch the shared connection's schema; start clean.
    yield
    if connection.connection is not None:
        connection.set_schema_to_public()


@contextmanager
def _committed(django_db_blocker):
    import uuid

    with django_db_blocker.unblock():
        world = build_world(f"c{uuid.uuid4().hex[:10]}")
        try:
            yield world
        finally:
            connection.set_schema_to_public()
            Tenant.objects.get(pk=world.tenant.pk).delete(force_drop=True)


@pytest.fixture
def committed_world(django_db_setup, django_db_blocker):
    """A tenant whose data is committed, for code that runs on other connections (a live
    server thread, a Celery worker). Dropped with its schema afterwards."""
    with _committed(django_db_blocker) as world:
        yield world


@pytest.fixture(scope="module")
def committed_module_world(django_db_setup, django_db_blocker):
    """A committed tenant shared by the tests of one module (a browser sweep that signs in and
    builds its pages once). What a test writes stays for the next: write only before the tests."""
    with _committed(django_db_blocker) as world:
        yield world


@pytest.fixture
def committed_other(django_db_setup, django_db_blocker):
    """A second committed tenant, beside `committed_world`."""
    with _committed(django_db_blocker) as world:
        yield world


@pytest.fixture(autouse=True)
def _forget_counters():
    """Failed sign-ins, password links, open event streams, calls out and message buckets are
    counted in Redis (and streams and calls in the process), outside the rolled-back transaction: forget them after
    each test, so no later test finds `ana` locked out, an address out of links or a tenant out of
    streams because of an earlier one (a test client leaves a stream it did not read open)."""
    yield
    from django.core.cache import cache

    from asixto import web_calls
    from runtime import stream_slots

    client = cache._cache.get_client(write=True)
    for pattern in ("*axes-*", "*password-links:*", "asixto:streams:*", "asixto:web-calls:*", "asixto:rate:*"):
        for key in client.scan_iter(match=pattern):
            client.delete(key)
    for process_slots in (stream_slots._process, web_calls._process):
        process_slots._taken = 0
