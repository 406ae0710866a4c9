"""Start Django for a benchmark on a database of its own, dropped (WITH FORCE) and recreated each run:
`ASIXTO_BENCH_DATABASE`, else `asixto_bench_<script>`. Only names that start with `asixto_bench`
are ever dropped, so a benchmark cannot take the platform's database or a test database with it.
The process that made it drops it again as it exits (`ASIXTO_BENCH_KEEP=1` keeps it to look into)."""

import atexit
import os
import sys
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


BENCH_PREFIX = "asixto_bench"


def bench_database(suffix=""):
    """This benchmark's database name (one per script by default, so two benchmarks can run at
    once), with `suffix` for a second database of the same run."""
    name = os.environ.get("ASIXTO_BENCH_DATABASE") or f"{BENCH_PREFIX}_{Path(sys.argv[0]).stem}"
    return name + suffix


def _drop(admin_url, database):
    from django.db import connections

    connections.close_all()
    try:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    except psycopg.Error as exc:  # the next run drops it anyway
        print(f"could not drop the benchmark database {database}: {exc}", file=sys.stderr)


def setup(database=None):
    database = database or bench_database()
    if not database.startswith(BENCH_PREFIX):
        sys.exit(f"refusing to drop and recreate {database!r}: a benchmark database's name starts with {BENCH_PREFIX!r}")
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/asixto")
    admin_url = base.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')
    if os.environ.get("ASIXTO_BENCH_KEEP") != "1":
        atexit.register(_drop, admin_url, database)
    os.environ["DATABASE_URL"] = base.rsplit("/", 1)[0] + "/" + database
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # The example stdio server runs with the venv's Python, which a machine may keep where an
    # unprivileged user cannot read it (/root): as in the tests, children keep the bench's user.
    os.environ.setdefault("ASIXTO_STDIO_USER", "")
    os.environ.setdefault("ASIXTO_STDIO_UID_BASE", "")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate_schemas", shared=True, verbosity=0)
