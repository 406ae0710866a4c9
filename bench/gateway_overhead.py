"""P1: a tool call through the gateway against a bare HTTP POST of the same JSON-RPC body.

    python bench/gateway_overhead.py [--calls 500]

The example MCP server (examples/soporte) runs in its own process on loopback. "Bare" is an
httpx POST of the exact body the gateway sends (same headers, keep-alive client). The two are
measured alternately, call by call. "Gateway" is
`call_tool`: tool lookup, policy, argument validation, `_meta`, the POST, output validation,
sanitising and the call record in PostgreSQL. Both medians and their ratio are printed."""

import argparse
import socket
import statistics
import subprocess
import sys
import time
import uuid

from _django import ROOT, setup


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(port, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the example server did not start")


def medians_ms(first, second, calls):
    """Both functions, alternating call by call, so both are measured under the same conditions
    (a background flush, another process's burst) rather than one after the other."""
    for _ in range(20):
        first(), second()  # warm-up: connections, validators, caches
    samples = ([], [])
    for _ in range(calls):
        for function, bucket in ((first, samples[0]), (second, samples[1])):
            start = time.perf_counter()
            function()
            bucket.append(time.perf_counter() - start)
    return statistics.median(samples[0]) * 1000, statistics.median(samples[1]) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    import os

    os.environ["ASIXTO_ALLOW_PRIVATE_HOSTS"] = "1"
    setup()
    import httpx
    from django.db import connection
    from django_tenants.utils import tenant_context

    from tenants.services import tenant_create
    from tools.gateway import CallContext, call_tool, flush_records
    from tools.gateway import http as gateway_http
    from tools.gateway.call import build_meta
    from tools.services import catalog_sync, server_create

    port = free_port()
    server_process = subprocess.Popen(
        [sys.executable, "-m", "examples.soporte", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(port)
        url = f"http://127.0.0.1:{port}/mcp"
        tenant = tenant_create(slug="bench-gateway", name="Bench").tenant
        connection.set_schema_to_public()
        arguments = {"consulta": "router"}
        context = CallContext(channel="chat", idempotency_key="bench", conversation_id="bench")
        client = httpx.Client()
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "buscar_producto"}
        body = gateway_http.build_body(1, "buscar_producto", arguments, build_meta(context, f"req_{uuid.uuid4().hex[:20]}", "bench"))

        def bare():
            response = client.post(url, content=body, headers=headers)
            assert response.status_code == 200

        with tenant_context(tenant):
            catalog_sync(server=server_create(data={"slug": "soporte", "transport": "streamable_http", "url": url}))

            def through_gateway():
                outcome = call_tool(name="soporte__buscar_producto", arguments=arguments, context=context)
                assert outcome.ok, outcome

            bare_ms, gateway = medians_ms(bare, through_gateway, args.calls)
            flush_records()
    finally:
        server_process.terminate()
        server_process.wait(5)
    print(f"bare httpx POST, median of {args.calls}:   {bare_ms:.2f} ms")
    print(f"through the gateway, median of {args.calls}: {gateway:.2f} ms")
    print(f"ratio gateway/bare: {gateway / bare_ms:.2f}  (goal ≤ 1.25)")


if __name__ == "__main__":
    main()
