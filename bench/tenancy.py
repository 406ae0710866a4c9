"""P5: tenant creation time (cloning the template schema vs migrating), and API request time with
1 and with N (default 500) tenants.

    python bench/tenancy.py [--rounds 10] [--tenants 500] [--requests 300] [--batches 6]

Creation: `tenant_create` (schema, admin user, admin key) in one run, alternating the two ways of
making the schema — cloning the migrated template (the default) and migrating it
(ASIXTO_TENANT_CLONE=0) — `--rounds` times each, interleaved, the order swapped every round, so
both ways see the same machine; median and p90 of each, and the time to build the template once.
API: median of GET /api/v1/tenant with an admin key through the full middleware stack (in-process
WSGI client, so no network time), from two worker processes — one on a database with 1 tenant,
one on a database with N (made by cloning) — asked in alternating batches, so the two figures are
taken minutes apart at most, not an hour. The load average (os.getloadavg) is printed before and
after each part: figures taken under a load near or above the 2 CPUs are not comparable.

Not covered: creation of several tenants at once, `migrate_schemas` over N tenants, a template
rebuild after a deploy (timed only as the first build), network and web-server time (threads, the
connection pool under concurrent requests), Celery, and the first request of a new process."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _django import bench_database, setup


def load():
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def p90(samples):
    return statistics.quantiles(samples, n=10)[-1] if len(samples) > 1 else samples[0]


def creations(rounds):
    """Seconds per tenant_create for each way of making the schema, interleaved."""
    from django.db import connection, transaction
    from django.test import override_settings

    from tenants.schema_template import template_ensure
    from tenants.services import tenant_create

    start = time.perf_counter()
    with transaction.atomic():
        template_ensure()
    print(f"template schema built in {(time.perf_counter() - start) * 1000:.0f} ms", flush=True)
    samples = {"clone": [], "migrate": []}
    for index in range(rounds):
        for way in ("clone", "migrate") if index % 2 == 0 else ("migrate", "clone"):
            with override_settings(ASIXTO_TENANT_CLONE=way == "clone"):
                start = time.perf_counter()
                tenant_create(slug=f"{way}-{index:04d}", name=f"{way} {index}")
                samples[way].append(time.perf_counter() - start)
            connection.set_schema_to_public()
    return samples


def serve_api(tenants):
    """Worker: a database with `tenants` tenants; answers each line `N` with N request times."""
    setup(bench_database(f"_api_{tenants}"))
    from django.db import connection
    from django.test import Client

    from tenants.services import tenant_create

    # Slugs (so schemas, so cache keys) of their own per worker: both share one Redis.
    first = tenant_create(slug=f"bench{tenants}-0000", name="Bench 0")
    for index in range(1, tenants):
        tenant_create(slug=f"bench{tenants}-{index:04d}", name=f"Bench {index}")
    connection.set_schema_to_public()
    client = Client(headers={"Authorization": f"Bearer {first.admin_api_key}"})
    for _ in range(50):  # warm-up: connection, URLconf, translations, caches
        client.get("/api/v1/tenant")
    print("ready", flush=True)
    for line in sys.stdin:
        samples = []
        for _ in range(int(line)):
            start = time.perf_counter()
            response = client.get("/api/v1/tenant")
            samples.append(time.perf_counter() - start)
            assert response.status_code == 200, response.content
        print(json.dumps(samples), flush=True)


def api_medians(tenants, requests, batches):
    workers = {count: subprocess.Popen([sys.executable, __file__, "--serve-api", str(count)], text=True,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
               for count in (1, tenants)}
    try:
        for worker in workers.values():
            assert worker.stdout.readline().strip() == "ready"
        print(f"  … databases with 1 and {tenants} tenants ready; {load()}", flush=True)
        samples = {count: [] for count in workers}
        per_batch = max(1, requests // batches)
        for batch in range(batches):
            for count in workers if batch % 2 == 0 else reversed(workers):
                workers[count].stdin.write(f"{per_batch}\n")
                workers[count].stdin.flush()
                samples[count] += json.loads(workers[count].stdout.readline())
        return {count: statistics.median(values) for count, values in samples.items()}
    finally:
        for worker in workers.values():
            worker.stdin.close()
            worker.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10, help="tenant creations per way")
    parser.add_argument("--tenants", type=int, default=500)
    parser.add_argument("--requests", type=int, default=300, help="API requests per tenant count")
    parser.add_argument("--batches", type=int, default=6, help="alternating API batches")
    parser.add_argument("--serve-api", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_api:
        return serve_api(args.serve_api)
    setup()
    print(f"P5 on {os.cpu_count()} CPUs; {load()}", flush=True)
    samples = creations(args.rounds)
    for way, values in samples.items():
        print(f"tenant creation by {way:7s}: median {statistics.median(values) * 1000:.0f} ms, "
              f"p90 {p90(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f}, "
              f"{len(values)} alternated)")
    print(f"  {load()}", flush=True)
    medians = api_medians(args.tenants, args.requests, args.batches)
    one, many = medians[1], medians[args.tenants]
    print(f"GET /api/v1/tenant median with 1 tenant:   {one * 1000:.2f} ms")
    print(f"GET /api/v1/tenant median with {args.tenants} tenants: {many * 1000:.2f} ms")
    print(f"ratio {args.tenants}/1: {many / one:.2f} ({args.batches} alternating batches); {load()}")


if __name__ == "__main__":
    main()
