"""Settings of the benchmarks' Celery worker: the project's, plus Django's psycopg pool when
BENCH_DB_POOL_MAX is set (> 0), so a run can compare no pool with a bounded one. Its connections
carry an application name, so a benchmark can count them in pg_stat_activity. With
BENCH_MEMORY_PROBE, the worker answers questions about its memory (bench/_memory_probe.py)."""

import os

from asixto.settings import *  # noqa: F403

DATABASES["default"].setdefault("OPTIONS", {})["application_name"] = os.environ.get(  # noqa: F405
    "BENCH_APPLICATION_NAME", "asixto-bench")
_pool_max = int(os.environ.get("BENCH_DB_POOL_MAX", "0") or 0)
if _pool_max > 0:
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405 (required with a pool)
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {  # noqa: F405
        "min_size": 2, "max_size": _pool_max, "timeout": 60}

if os.environ.get("BENCH_MEMORY_PROBE"):  # bench/worker_memory.py asks the worker about its memory
    import _memory_probe

    _memory_probe.start(os.environ["BENCH_MEMORY_PROBE"])
