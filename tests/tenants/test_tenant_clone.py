"""Tenant creation clones the migrated template schema (T5, P5): the clone is the schema a
migration would have made, a template behind the code is rebuilt first, and the template is never
a tenant."""

import io
import logging
import threading

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings
from django_tenants.utils import schema_exists

from tenants.models import Tenant
from tenants.services import tenant_create
from tests.support.schema_signature import migrations_applied_at, schema_signature

TEMPLATE = settings.ASIXTO_TENANT_TEMPLATE_SCHEMA


def _sql(statement):
    with connection.cursor() as cursor:
        cursor.execute(statement)


def test_it_clones_a_schema_identical_to_a_migrated_one(db):
    """T5, P5, issue 20: tables, columns, constraints, indexes, sequences and their owners, the
    text-search dictionaries and configurations, the migrations recorded and the rows migrate
    writes are the same in a cloned and in a migrated schema."""
    cloned = tenant_create(slug="cloned", name="Cloned").tenant
    with override_settings(ASIXTO_TENANT_CLONE=False):
        migrated = tenant_create(slug="migrated", name="Migrated").tenant
    # The clone carries the template's records (their times too); the migrated schema made its own.
    assert migrations_applied_at("cloned") == migrations_applied_at(TEMPLATE)
    assert migrations_applied_at("migrated") != migrations_applied_at(TEMPLATE)
    clone, migration = schema_signature(cloned.schema_name), schema_signature(migrated.schema_name)
    assert len(clone["tables"]) > 20 and clone["migrations"] and clone["rows of django_content_type"]
    assert [row[:2] for row in clone["text search"]] == [
        ("configuration", "english_nostop"), ("configuration", "spanish_nostop"),
        ("dictionary", "english_stem_nostop"), ("dictionary", "spanish_stem_nostop")]
    for part in migration:
        assert clone[part] == migration[part], part
    assert clone == migration


@pytest.mark.parametrize("sabotage", [
    "DELETE FROM {t}.django_migrations WHERE id = (SELECT max(id) FROM {t}.django_migrations)",
    "DROP SCHEMA {t} CASCADE",
])
def test_it_rebuilds_a_template_behind_the_code_before_cloning(db, sabotage):
    """T5, P5: a template missing a migration (or missing altogether) is rebuilt, so the new tenant
    still gets every migration."""
    complete = {(app, name) for app, name, _ in migrations_applied_at(TEMPLATE)}
    _sql(sabotage.format(t=TEMPLATE))
    created = tenant_create(slug="after-sabotage", name="After").tenant
    assert {(app, name) for app, name, _ in migrations_applied_at(created.schema_name)} == complete
    assert {(app, name) for app, name, _ in migrations_applied_at(TEMPLATE)} == complete
    clone, template = schema_signature(created.schema_name), schema_signature(TEMPLATE)
    for part in template:
        # The admin user tenant creation adds took a number of the users' sequence.
        if part != "sequences":
            assert clone[part] == template[part], part


def test_migrate_schemas_rebuilds_the_template_and_never_makes_it_a_tenant(db):
    """T1, T5: `migrate_schemas` keeps the template at the latest migration, yet no tenant row,
    domain or listing ever names it, and its slug is refused."""
    _sql(f"DROP SCHEMA {TEMPLATE} CASCADE")
    call_command("migrate_schemas", shared=True, interactive=False, verbosity=0)
    assert not schema_exists(TEMPLATE)  # the public schema's run leaves tenant schemas alone
    call_command("migrate_schemas", interactive=False, verbosity=0)
    assert schema_exists(TEMPLATE) and migrations_applied_at(TEMPLATE)
    assert not Tenant.objects.filter(schema_name=TEMPLATE).exists()
    with pytest.raises(CommandError, match="slug"):
        call_command("tenant_create", TEMPLATE.replace("_", "-"), "--name", "X", "--json", stdout=io.StringIO())


def test_two_creations_at_once_rebuild_a_missing_template_once(django_db_setup, django_db_blocker, caplog):
    """T5, P5: two tenants created at once, each on its own connection, while the template is
    missing: the advisory lock lets one rebuild it while the other waits, and both clones are whole."""
    caplog.set_level(logging.INFO, logger="tenants.schema_template")
    barrier, created, errors = threading.Barrier(2, timeout=120), {}, []

    def create(slug):
        try:
            barrier.wait()
            created[slug] = tenant_create(slug=slug, name=slug).tenant
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    with django_db_blocker.unblock():
        _sql(f"DROP SCHEMA {TEMPLATE} CASCADE")
        threads = [threading.Thread(target=create, args=(f"at-once-{n}",)) for n in (1, 2)]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=600)
            assert not errors and len(created) == 2, errors
            builds = [record for record in caplog.records if record.getMessage().startswith("Building the tenant template")]
            assert len(builds) == 1
            complete = schema_signature(TEMPLATE)
            for tenant in created.values():
                signature = schema_signature(tenant.schema_name)
                assert {part: value for part, value in signature.items() if part != "sequences"} == {
                    part: value for part, value in complete.items() if part != "sequences"}
        finally:
            connection.set_schema_to_public()
            for tenant in Tenant.objects.filter(slug__startswith="at-once-"):
                tenant.delete(force_drop=True)


@pytest.mark.parametrize("hand_made", [
    "CREATE VIEW {t}.hand_made AS SELECT 1 AS one",
    # A default copied by LIKE would keep naming the template's own text-search configuration.
    "CREATE TABLE {t}.hand_made (words tsvector DEFAULT to_tsvector('{t}.spanish_nostop'::regconfig, 'hola'))",
], ids=["view", "default on a text search configuration"])
def test_it_migrates_the_schema_when_the_template_holds_what_the_copy_cannot_make(db, caplog, hand_made):
    """T5, issue 20: a template with an object the copy does not reproduce (a view; a default that
    names the template's text-search configuration) is not copied half-way: the new schema is
    migrated, and the log says why."""
    from tenants.schema_template import _script

    _sql(hand_made.format(t=TEMPLATE))
    _script.cache_clear()  # a process reads the template once per set of migrations
    try:
        created = tenant_create(slug="not-copied", name="Not copied").tenant
    finally:
        _script.cache_clear()
    assert migrations_applied_at(created.schema_name) != migrations_applied_at(TEMPLATE)
    assert {(a, n) for a, n, _ in migrations_applied_at(created.schema_name)} == {
        (a, n) for a, n, _ in migrations_applied_at(TEMPLATE)}
    assert any("cannot be cloned" in record.getMessage() and "hand_made" in record.getMessage() for record in caplog.records)



def test_a_session_that_found_no_template_sees_the_one_built_meanwhile(django_db_setup, django_db_blocker):
    """T5, P5: two creations at once while the template is missing: the one that waited on the lock
    while the other built it reads the new template (and builds nothing) though it looked for it
    before, in the same transaction. Looked up by name in the session's catalog cache (to_regclass),
    it stayed missing until the session took a table lock, so the waiter dropped and built it again."""
    from django.db import connections, transaction

    from tenants.schema_template import _recorded

    probe = "zz_template_probe"
    with django_db_blocker.unblock():
        other = connections.create_connection("default")
        other.ensure_connection()
        other.set_autocommit(True)  # what it builds is committed at once, as another creation's would be
        try:
            with override_settings(ASIXTO_TENANT_TEMPLATE_SCHEMA=probe), transaction.atomic():
                with connection.cursor() as cursor:
                    assert _recorded(cursor) is None
                    with other.cursor() as built_meanwhile:  # another session
                        built_meanwhile.execute(f"CREATE SCHEMA {probe}")
                        built_meanwhile.execute(f"CREATE TABLE {probe}.django_migrations (app text, name text)")
                        built_meanwhile.execute(f"INSERT INTO {probe}.django_migrations VALUES ('tools', '0001_initial')")
                    assert _recorded(cursor) == {("tools", "0001_initial")}
        finally:  # this session's transaction is over: it holds no lock on the probe any more
            with other.cursor() as cursor:
                cursor.execute(f"DROP SCHEMA IF EXISTS {probe} CASCADE")
            other.close()
            connection.close()
