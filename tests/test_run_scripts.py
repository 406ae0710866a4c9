"""The set-up scripts: what `./run` and `./manage` connect to (A2: a newcomer's second checkout
must not share the first one's broker)."""

import os
import re
import shlex
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
