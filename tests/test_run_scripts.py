"""The set-up scripts: what `./run` and `./manage` connect to (A2: a newcomer's second checkout
must not share the first one's broker)."""

import os
import re
import shlex
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

import pytest

from tests.support.outbound import closed_port

ROOT = Path(__file__).resolve().parent.parent


def services(database, **env):
    """The exports bin/services.py prints for `database`, with the machine's local servers."""
    environment = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL", "ASIXTO_REDIS_DB")}
    environment.update(env)
    printed = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "services.py"), "--database", database, "--no-embedded", "--no-create"],
        env=environment, capture_output=True, text=True, check=True, timeout=120,
    ).stdout
    return dict(line.removeprefix("export ").split("=", 1) for line in printed.splitlines() if line.startswith("export "))


def test_a_second_database_gets_a_redis_database_of_its_own():
    """A2: `./run` with ASIXTO_DATABASE set also gets its own Redis database (never the tests' 15),
    stable from run to run; ASIXTO_REDIS_DB chooses one explicitly."""
    default, second, again = services("asixto"), services("asixto_second"), services("asixto_second")
    assert default["REDIS_URL"].endswith("/0") and default["DATABASE_URL"].endswith("/asixto")
    number = int(second["REDIS_URL"].rsplit("/", 1)[1])
    assert 1 <= number <= 14 and second["REDIS_URL"] == again["REDIS_URL"]
    assert services("asixto_second", ASIXTO_REDIS_DB="9")["REDIS_URL"].endswith("/9")


def test_naming_a_database_without_creating_it_leaves_none_behind():
    """Issue 19: `./run-tests` names the platform's database with --no-create; the tests make their
    own `test_…` databases, so a run leaves no `asixto_…` database on the server."""
    import psycopg

    name = "asixto_never_created"
    exports = services(name)
    assert exports["DATABASE_URL"].endswith(f"/{name}")
    with psycopg.connect(exports["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres", autocommit=True) as server:
        assert server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None


def test_the_python_peers_are_not_installed_again_when_their_pins_are_there(tmp_path):
    """A2, issue 8: ./run-tests keeps `.peers` in sync with requirements-peers.txt; with the pins
    installed it needs no network, even when the stamp is missing (pip would fail: no index)."""
    if not (ROOT / ".peers" / "bin" / "python").exists():
        pytest.skip(".peers is not installed (./run-tests creates it)")
    stamp = ROOT / ".peers" / ".requirements.sha256"
    stamp.unlink(missing_ok=True)
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path)}
    done = subprocess.run(["bash", "-c", "set -euo pipefail; source bin/_peers.sh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "installing" not in done.stderr
    assert stamp.read_text().strip() == subprocess.run(
        ["sha256sum", "requirements-peers.txt"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()[0]


def test_run_starts_a_worker_that_holds_hundreds_of_turns():
    """P4, A2: `./run` starts the turn worker the README recommends: one process with the threads
    pool, 200 turns at once by default, on a bounded pool of at most 20 database connections
    (prefork with two children holds two turns)."""
    script = (ROOT / "run").read_text().replace("\\\n", " ")  # continued lines as one
    worker = next(line for line in script.splitlines() if re.search(r"\bcelery\b.*\bworker\b", line))
    words = shlex.split(worker.split("&")[0])
    values = {word.split("=", 1)[0]: word.split("=", 1)[1] for word in words if "=" in word and not word.startswith("-")}
    assert words[words.index("--pool") + 1] == "threads"
    concurrency = next(word for word in words if word.startswith("--concurrency")).split("=", 1)[1]
    assert int(re.fullmatch(r"\$\{CELERY_CONCURRENCY:-(\d+)\}", concurrency).group(1)) >= 200
    assert 0 < int(re.fullmatch(r"\$\{CELERY_DB_POOL_MAX_SIZE:-(\d+)\}", values["DB_POOL_MAX_SIZE"]).group(1)) <= 20


def test_the_embedded_redis_asks_for_a_password():
    """Issue 19 H1: the Redis `./run` starts when none answers requires the password it generated
    (kept in var/redis/password, mode 0600); a local process without it is refused."""
    import redis

    sys.path.insert(0, str(ROOT / "bin"))
    try:
        import services as setup
    finally:
        sys.path.remove(str(ROOT / "bin"))
    # A port of this test's own (./run's is EMBEDDED_REDIS_PORT): a second copy of the suite, or a
    # running ./run, must not share its server and password file.
    port = closed_port()
    url = setup.embedded_redis_url(port)
    try:
        assert ":" in url.split("@")[0].removeprefix("redis://") and url.endswith(f"@127.0.0.1:{port}/0")
        assert (ROOT / "var" / "redis" / "password").stat().st_mode & 0o077 == 0
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=port).ping()
        assert redis.Redis.from_url(url).ping() is True
    finally:
        with suppress(redis.ConnectionError):
            redis.Redis.from_url(url).shutdown(nosave=True)
