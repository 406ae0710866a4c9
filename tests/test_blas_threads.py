"""Every platform process runs numpy's BLAS on one thread (P4, issue 22).

Numpy's OpenBLAS otherwise starts a thread per core and keeps them spinning after each product:
in a turn worker, whose routing check multiplies small matrices on many threads at once, that
doubled the check's CPU and took a core from the web server and PostgreSQL (bench/turn_concurrency.py
--live). The encoders ask for one thread through threadpoolctl, which is not installed."""

import os
import subprocess
import sys

import pytest

from asixto.settings import BASE_DIR

PRODUCTS = ("import os, numpy; a = numpy.ones((300, 300)); [a @ a for _ in range(5)]; "
            "print(len(os.listdir('/proc/self/task')))")


def threads_after_products(*, first: str) -> int:
    env = {name: value for name, value in os.environ.items() if name not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", f"{first}; {PRODUCTS}"], cwd=BASE_DIR, env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2, reason="Linux, 2 CPUs or more")
def test_it_multiplies_on_one_thread_in_a_platform_process():
    if threads_after_products(first="pass") == 1:
        pytest.skip("this numpy's BLAS starts no threads of its own here")
    assert threads_after_products(first="import asixto") == 1
