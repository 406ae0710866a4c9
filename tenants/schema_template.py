"""The template schema new tenants are cloned from (issue 22, P5; T5).

`ASIXTO_TENANT_TEMPLATE_SCHEMA` (asixto_template) is a schema migrated like a tenant's and holding
only what migrate writes; it is no tenant (no Tenant row, no domain: never listed nor routed).
`migrate_schemas` keeps it current through the migration executor below, and tenant creation
checks it first: a template missing, or missing one of the code's migrations, is dropped and
migrated again from nothing, so a clone is always the schema a fresh migration would make.

Concurrency (two creations at once, in two processes): a PostgreSQL advisory lock, held until the
caller's transaction ends — shared while a schema is cloned, exclusive while the template is
rebuilt, and the template is checked again once the exclusive lock is held, so it is rebuilt once."""

import functools
import logging

from django.conf import settings
from django.core.management import call_command
from django.db import connection, transaction
from django.db.migrations.loader import MigrationLoader
from django_tenants.migration_executors import get_executor
from psycopg import sql

from tenants.schema_clone import CloneUnsupported, build_script, run_script

logger = logging.getLogger(__name__)

LOCK_KEY = 0x61736978_74706C  # "asix" "tpl": the template's advisory lock, one per database


def template_name() -> str:
    return settings.ASIXTO_TENANT_TEMPLATE_SCHEMA


@functools.cache
def _code_migrations() -> tuple:
    """Each migration of the code as the names a migrated schema records for it: its own, or
    those it replaces (a squashed migration applied as its parts)."""
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    return tuple((key, frozenset(graph.nodes[key].replaces or ())) for key in graph.nodes)


def _is_current(recorded) -> bool:
    # Migrations the template has beyond the code's (a newer release migrated it) are no reason
    # to rebuild it back: two releases side by side would take turns rebuilding it.
    return recorded is not None and all(
        key in recorded or (replaces and replaces <= recorded) for key, replaces in _code_migrations()
    )


def _recorded(cursor):
    """The migrations recorded in the template, or None without a template."""
    # Read from pg_class with the statement's snapshot, not by to_regclass: that looks the name up in the
    # session's catalog cache, which a session waiting on the advisory lock has not refreshed, so it
    # could miss the template another session just built and build it again.
    cursor.execute("SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                   "WHERE n.nspname = %s AND c.relname = 'django_migrations'", [template_name()])
    if cursor.fetchone() is None:
        return None
    table = sql.Identifier(template_name(), "django_migrations").as_string(cursor.connection)
    cursor.execute(f"SELECT app, name FROM {table}")
    return frozenset(cursor.fetchall())


def _rebuild(*, verbosity: int) -> None:
    schema = sql.Identifier(template_name())
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(schema).as_string(cursor.connection))
        cursor.execute(sql.SQL("CREATE SCHEMA {}").format(schema).as_string(cursor.connection))
    logger.info("Building the tenant template schema %s", template_name())
    call_command("migrate_schemas", tenant=True, schema_name=template_name(), interactive=False, verbosity=verbosity)
    connection.set_schema_to_public()


def template_ensure(*, verbosity: int = 0) -> frozenset:
    """Make sure the template is current (rebuilding it if not) and return its recorded
    migrations. Runs in a transaction and holds the template's lock until that transaction ends."""
    with transaction.atomic():
        connection.set_schema_to_public()
        with connection.cursor() as cursor:
            if _is_current(_recorded(cursor)):
                cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", [LOCK_KEY])
                if _is_current(recorded := _recorded(cursor)):
                    return recorded
            # Reached holding the shared lock only if the template fell behind in the meantime
            # (a deploy mid-transaction): two such sessions would deadlock, and PostgreSQL fails one.
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
            if _is_current(recorded := _recorded(cursor)):
                return recorded  # another process rebuilt it while this one waited
        _rebuild(verbosity=verbosity)
        with connection.cursor() as cursor:
            return _recorded(cursor)


@functools.lru_cache(maxsize=4)
def _script(template: str, recorded: frozenset):
    # Keyed by the template's migrations: a template rebuilt from the same code reads the same.
    # The template changes only through migrations; a change by hand is seen by new processes.
    return build_script(template)


def clone_template(*, schema_name: str) -> bool:
    """Create `schema_name` as a copy of the current template, in the caller's transaction.
    False, with nothing created, when the template holds what the copy cannot reproduce: the
    caller then migrates the schema instead."""
    with transaction.atomic():
        recorded = template_ensure()
        try:
            script = _script(template_name(), recorded)
        except CloneUnsupported as exc:
            logger.warning("Tenant template %s cannot be cloned (%s): migrating %s instead", template_name(), exc, schema_name)
            return False
        run_script(script, schema_name=schema_name)
    return True


class _KeepsTemplateCurrent:
    """After `migrate_schemas` migrated every tenant, bring the template to the same migrations.
    A run for one schema (a tenant's, or the template's own rebuild) leaves it alone."""

    def run_migrations(self, tenants=None):
        # Decided first: the standard executor takes the public schema out of the list it is given.
        every_tenant = not self.options.get("schema_name") and list(tenants or []) != [self.PUBLIC_SCHEMA_NAME]
        super().run_migrations(tenants=tenants)
        if every_tenant and settings.ASIXTO_TENANT_CLONE:
            template_ensure(verbosity=int(self.options.get("verbosity", 1)))


@functools.cache
def migration_executor(codename=None):
    """django-tenants' executor (GET_EXECUTOR_FUNCTION) with the template kept current."""
    base = get_executor(codename)
    return type(f"TemplateAware{base.__name__}", (_KeepsTemplateCurrent, base), {})
