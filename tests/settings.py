"""Test settings: the real settings, with private hosts allowed (the test doubles run on
loopback), a fast password hasher, and a Redis database of their own so a developer's running
worker never picks up a test's task (or the reverse)."""

import os
from urllib.parse import urlsplit, urlunsplit

os.environ.setdefault("ASIXTO_ALLOW_PRIVATE_HOSTS", "1")
# The scripted models of the unrouted tests play one answer per request: a router call would
# take one. Routing tests turn it on (tests/runtime/test_routing_*.py).
os.environ.setdefault("ASIXTO_ROUTING", "0")
# Tests change a tenant's settings and run its next turn at once, in this process: tasks read the
# tenant every time (tests/runtime/test_worker_tenant_cache.py turns the cache on).
os.environ.setdefault("ASIXTO_WORKER_TENANT_CACHE_SECONDS", "0")
# No lease-keeper thread: tests run turns inside transactions it could not see; the tests of the
# keeper turn it on (tests/runtime/test_turn_faults.py).
os.environ.setdefault("ASIXTO_TURN_LEASE_RENEW_SECONDS", "0")
# stdio test servers run with the venv's Python, which a machine may keep where an unprivileged
# user cannot read it (/root): children keep the tests' own user, without any capability.
# tests/tools/test_stdio_isolation.py runs them as an unprivileged user too.
os.environ.setdefault("ASIXTO_STDIO_USER", "")
# ...and no uid of their own either (tests/tools/test_stdio_tenant_isolation.py turns it on), with
# their private directories under the temporary folder, one tree per test database.
os.environ.setdefault("ASIXTO_STDIO_UID_BASE", "")
os.environ.setdefault(
    "ASIXTO_STDIO_ROOT", os.path.join("/tmp", f"asixto-stdio-{os.environ.get('ASIXTO_TEST_DATABASE', 'test')}")
)
# The call journal (tools/gateway/journal.py) and Prometheus metrics (on only in the tests that turn
# them on, tests/test_metrics*.py): this test database's directories. The pytest process empties the
# ones chosen here as its session starts (tests/conftest.py): the fixed tenants alpha and beta come back
# with the same schemas, so an old session's journal must not reach them, and totals start from zero.
# A child process keeps its parent's directories and never empties one: a child started with a
# stripped environment (makemessages in tests/test_languages.py) chooses the same paths, and emptying
# them would take the files the session is writing from under it.
SESSION_DIRS = []
for _variable, _prefix in (("ASIXTO_CALL_JOURNAL_DIR", "journal"), ("PROMETHEUS_MULTIPROC_DIR", "metrics")):
    if _variable not in os.environ:
        os.environ[_variable] = os.path.join("/tmp", f"asixto-{_prefix}-{os.environ.get('ASIXTO_TEST_DATABASE', 'test')}")
        SESSION_DIRS.append(os.environ[_variable])
_redis = urlsplit(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
os.environ["REDIS_URL"] = urlunsplit(_redis._replace(path="/" + os.environ.get("ASIXTO_TEST_REDIS_DB", "15")))
os.environ.pop("CELERY_BROKER_URL", None)
os.environ.pop("CELERY_RESULT_BACKEND", None)

from asixto.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Two suites at once on one machine (two checkouts, two developers) each need their own database.
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("ASIXTO_TEST_DATABASE", f"test_{DATABASES['default']['NAME']}")}  # noqa: F405
