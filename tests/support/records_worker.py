"""A real Celery worker (prefork children) for the call-record tests (G9).

    python tests/support/records_worker.py QUEUE [celery worker options]

The project's Celery app with one prefork child and the test tasks of
tests/support/records_tasks.py, consuming QUEUE only. The record writer's batch window is an
hour, so a record is stored only when something flushes it. Needs DJANGO_SETTINGS_MODULE and
DATABASE_URL (the test database) in the environment."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main():
    import django

    django.setup()
    from asixto.celery import app
    from tools.gateway import records

    records.LINGER_SECONDS = 3600
    queue, options = sys.argv[1], sys.argv[2:]
    app.worker_main(["worker", "--pool=prefork", "--concurrency=1", "--loglevel=WARNING", "--without-heartbeat",
                     "--without-mingle", "--without-gossip", "-I", "tests.support.records_tasks", "-Q", queue, *options])


if __name__ == "__main__":
    main()
