"""The set-up scripts: what `./run` and `./manage` connect to (A2: a newcomer's second checkout
must not share the first one's broker)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def services(database, **env):
    """The exports bin/services.py prints for `database`, with the machine's local servers."""
    environment = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL", "ASIXTO_REDIS_DB")}
    environment.update(env)
    printed = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "services.py"), "--database", database, "--no-embedded"],
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
