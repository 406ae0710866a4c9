"""P5: tenant creation time, and API request time with 1 and with N (default 500) tenants.

    python bench/tenancy.py [--tenants 500] [--requests 300]

Creation: median of the first 20 `tenant_create` calls (schema + migrations + admin + key).
API: median of GET /api/v1/tenant with an admin key, through the full middleware stack
(in-process WSGI client, so no network time), measured with 1 tenant and again with N."""

import argparse
import statistics
import time

from _django import setup


def api_median(client, requests):
    client.get("/api/v1/tenant")  # warm-up: connection, URLconf, translations
    samples = []
    for _ in range(requests):
        start = time.perf_counter()
        response = client.get("/api/v1/tenant")
        samples.append(time.perf_counter() - start)
        assert response.status_code == 200, response.content
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tenants", type=int, default=500)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    setup()
    from django.db import connection
    from django.test import Client

    from tenants.services import tenant_create

    creations = []
    first = None
    for index in range(args.tenants):
        start = time.perf_counter()
        created = tenant_create(slug=f"bench-{index:04d}", name=f"Bench {index}")
        connection.set_schema_to_public()
        if index < 20:
            creations.append(time.perf_counter() - start)
        if index == 0:
            first = created
            client = Client(headers={"Authorization": f"Bearer {created.admin_api_key}"})
            one = api_median(client, args.requests)
        if (index + 1) % 100 == 0:
            print(f"  … {index + 1} tenants", flush=True)
    many = api_median(client, args.requests)
    print(f"tenant creation, median of {len(creations)}: {statistics.median(creations) * 1000:.0f} ms "
          f"(min {min(creations) * 1000:.0f}, max {max(creations) * 1000:.0f})")
    print(f"GET /api/v1/tenant median with 1 tenant:   {one * 1000:.2f} ms")
    print(f"GET /api/v1/tenant median with {args.tenants} tenants: {many * 1000:.2f} ms")
    print(f"ratio {args.tenants}/1: {many / one:.2f}")
    assert first is not None


if __name__ == "__main__":
    main()
