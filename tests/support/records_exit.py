"""Make call records in a process of its own, then leave it the way the test names, to prove
what survives the exit (G9). Records are submitted with the writer's batch window set to an
hour, so nothing is stored unless something flushes.

    python tests/support/records_exit.py SCHEMA COUNT normal        # returns from main: atexit runs
    python tests/support/records_exit.py SCHEMA COUNT worker-child  # leaves like a Celery prefork child
    python tests/support/records_exit.py SCHEMA COUNT outage        # flushes when told on stdin, then
                                                                    # prints whether the flush ended in time

Needs DJANGO_SETTINGS_MODULE and DATABASE_URL (the test database) in the environment. Prints
the record ids as JSON on stdout."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main():
    schema, count, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    import django

    django.setup()
    from django_tenants.utils import tenant_context

    from tenants.models import Tenant
    from tools.gateway import CallContext, call_tool, records

    records.LINGER_SECONDS = 3600
    with tenant_context(Tenant.objects.get(schema_name=schema)):
        ids = [
            str(call_tool(name=f"crm__missing_{n}", arguments={}, context=CallContext(channel="chat", idempotency_key=f"exit-{n}")).record_id)
            for n in range(count)
        ]
    print(json.dumps(ids), flush=True)
    if mode == "outage":
        sys.stdin.readline()  # the test has taken the database away: store them now
        print("stored" if records.flush(timeout=600) else "not stored", flush=True)
    if mode == "worker-child":
        from celery.concurrency.prefork import process_destructor

        # Exactly what billiard's pool child does on its way out (billiard.pool.Worker._do_exit).
        process_destructor(os.getpid(), 0)
        os._exit(0)


if __name__ == "__main__":
    main()
