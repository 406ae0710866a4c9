"""Catalog sync over every transport, through the services (M1, M3, M4, M5, C6, C7, A4): stdio
servers run from operator-approved commands, stdio servers that hang, crash or flood stderr,
the third-party peer server-everything over stdio, SSE and streamable HTTP, and paginated
catalogs.

stdio children get the platform's fixed environment (`STDIO_ENV`), so the test server learns
where to write its pid from a `--pidfile` argument; every pid it wrote must be gone (not even
a zombie) once the sync has returned."""

import os
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.utils import translation

from tenants.models import ApprovedCommand
from tests.support.catalog_server import build_catalog_server, make_tools
from tests.support.everything import (
    ENTRY,
    NODE,
    TOOL_COUNT,
    requires_everything,
    serve_everything,
)
from tests.support.mcp_apps import streamable_app
from tests.support.mcp_servers import serve_asgi
from tools import mcp
from tools.models import CatalogVersion, Finding, Tool
from tools.services import STDIO_ENV, catalog_sync, server_create, server_update

SCRIPT = str(Path(__file__).resolve().parents[1] / "support" / "catalog_server.py")
# server-everything 2026.8.31 (pinned), in the order it lists them.
EVERYTHING_TOOLS = [
    "echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
    "get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource",
    "toggle-simulated-logging", "toggle-subscriber-updates", "trigger-long-running-operation",
    "simulate-research-query",
]


@pytest.fixture(autouse=True)
def _in_english():
    """These tests read the English messages (the interface's default language is Spanish)."""
    with translation.override("en"):
        yield


@pytest.fixture
def inventario(alpha):
    """alpha's agent has the scenario the test catalog's tools name (C6). The tenant object is
    shared by the whole session, so its previous scenarios are put back afterwards."""
    before = alpha.tenant.scenarios
    connection.set_schema_to_public()
    alpha.tenant.scenarios = ["inventario"]
    alpha.tenant.save(update_fields=["scenarios"])
    yield alpha
    alpha.tenant.scenarios = before


def approve(slug, executable, *base_args, allow_extra_args=False):
    """What a platform operator does in the public schema (M3)."""
    connection.set_schema_to_public()
    return ApprovedCommand.objects.create(
        slug=slug, executable=executable, base_args=[str(arg) for arg in base_args], allow_extra_args=allow_extra_args
    )


def register_stdio(world, command, *, slug="local", args=(), timeout=1.0):
    with world.schema():
        return server_create(data={
            "slug": slug, "transport": "stdio", "command": command, "args": list(args), "timeout_seconds": timeout,
        })


def register_http(world, transport, url, *, slug="remoto"):
    with world.schema():
        return server_create(data={"slug": slug, "transport": transport, "url": url})


def pids(pidfile):
    return [int(line) for line in pidfile.read_text().split()]


def assert_reaped(pidfile, *, at_least):
    started = pids(pidfile)
    assert len(started) >= at_least, started
    for pid in started:
        status = Path(f"/proc/{pid}/status")
        if status.exists():  # pragma: no cover - the failure message is the point
            state = next((line for line in status.read_text().splitlines() if line.startswith("State:")), "?")
            pytest.fail(f"child {pid} still exists after the sync ({state})")


def stored(server):
    """Everything a sync stores for `server`, by model, to prove that nothing was."""
    return {
        "versions": CatalogVersion.objects.filter(server=server).count(),
        "tools": Tool.objects.filter(server=server).count(),
        "findings": Finding.objects.filter(server=server).count(),
    }


def test_it_syncs_an_approved_command_with_only_the_explicit_environment(alpha, tmp_path, monkeypatch):
    """M1, M3, M5: a tenant picks an operator-approved command; the child runs with exactly
    the platform's explicit environment (nothing of ours leaks) in a private directory that is
    removed afterwards, and is reaped after each step of the sync."""
    monkeypatch.setenv("ASIXTO_PLATFORM_SECRET", "must-not-leak")
    pidfile = tmp_path / "pids"
    approve("introspector", sys.executable, SCRIPT, "--introspect", "--pidfile", pidfile)
    server = register_stdio(alpha, "introspector", timeout=30.0)
    with alpha.schema():
        version = catalog_sync(server=server)
        server.refresh_from_db()
        (tool,) = Tool.objects.filter(server=server)
    assert server.sync_status == "ok" and server.sync_error == ""
    assert server.protocol_version == "2026-07-28" and not server.is_legacy
    assert version.number == 1 and version.diff["added"] == ["entorno_proceso"]
    assert tool.prefixed_name == "local__entorno_proceso"
    child_env, child_cwd = tool.definition["_meta"]["com.example/env"], tool.definition["_meta"]["com.example/cwd"]
    assert child_env == STDIO_ENV
    assert os.path.basename(child_cwd).startswith("asixto-mcp-") and not os.path.exists(child_cwd)
    assert_reaped(pidfile, at_least=3)  # probe, then tools/list twice (M5)


def test_it_refuses_a_command_the_operator_did_not_approve(alpha):
    """M1, M3, A4: tenants cannot type commands, nor add arguments an operator did not allow,
    and a command the operator disabled stops working for servers already registered."""
    from asixto.errors import ApplicationError

    command = approve("catalogo", sys.executable, SCRIPT)
    with alpha.schema(), pytest.raises(ApplicationError) as refused:
        server_create(data={"slug": "rm", "transport": "stdio", "command": "/bin/rm"})
    assert "command" in refused.value.fields
    with alpha.schema(), pytest.raises(ApplicationError) as refused:
        server_create(data={"slug": "extra", "transport": "stdio", "command": "catalogo", "args": ["--hang"]})
    assert "args" in refused.value.fields

    server = register_stdio(alpha, "catalogo", timeout=1.5)
    connection.set_schema_to_public()
    ApprovedCommand.objects.filter(pk=command.pk).update(enabled=False)
    with alpha.schema():
        with pytest.raises(ApplicationError) as refused:
            catalog_sync(server=server)
        server.refresh_from_db()
        assert "command" in refused.value.fields
        assert server.sync_status == "error" and server.sync_error == str(refused.value.message)
        assert stored(server) == {"versions": 0, "tools": 0, "findings": 0}


@pytest.mark.parametrize(
    ("flags", "kind", "says"),
    [
        (["--hang"], "timeout", "did not answer tools/list in time"),
        (["--tools", "6", "--page-size", "2", "--crash-on-page", "2"], "process",
         "exited with status 3 during tools/list (page 2)"),
        (["--flood-forever"], "timeout", "did not answer tools/list in time"),
    ],
    ids=["hangs", "crashes-on-page-2", "floods-stderr-forever"],
)
def test_it_fails_a_first_sync_cleanly_when_the_stdio_server_misbehaves(alpha, tmp_path, flags, kind, says):
    """M3, M5, A4: a server that hangs, dies half-way through a paginated listing, or floods
    stderr and never answers: the sync ends in a clear error (on the row and raised), the child
    is killed and reaped, and nothing of the half-read catalog is stored."""
    pidfile = tmp_path / "pids"
    approve("catalogo", sys.executable, SCRIPT, "--pidfile", pidfile, *flags)
    # Room for the SDK import (over a second on a loaded machine) before the probe answers.
    server = register_stdio(alpha, "catalogo", timeout=10.0)
    with alpha.schema():
        with pytest.raises(mcp.McpError) as failed:
            catalog_sync(server=server)
        server.refresh_from_db()
        assert stored(server) == {"versions": 0, "tools": 0, "findings": 0}
    assert failed.value.kind == kind
    assert failed.value.message.startswith("The MCP server process 'python") and says in failed.value.message
    assert server.sync_status == "error" and server.sync_error == failed.value.message[:4000]
    if kind == "process":
        assert "simulated crash on page 2" in server.sync_error  # its last words, from stderr
    assert_reaped(pidfile, at_least=2)  # the probe's child and the listing's


def test_it_keeps_the_previous_catalog_when_a_later_stdio_sync_crashes(alpha, inventario, tmp_path):
    """M3, M5, C7, A4: a paginated stdio catalog is stored whole and in order; when a later sync
    crashes on page 2, the error is recorded and the last good catalog stays as it was."""
    pidfile = tmp_path / "pids"
    approve("catalogo", sys.executable, SCRIPT, "--pidfile", pidfile, allow_extra_args=True)
    server = register_stdio(alpha, "catalogo", args=["--tools", "25", "--page-size", "4"], timeout=30.0)
    with alpha.schema():
        first = catalog_sync(server=server)
        before = list(Tool.objects.filter(server=server).order_by("position").values_list(
            "pk", "name", "position", "definition_hash", "certification", "certified_hash", "removed_in"))
        findings_before = Finding.objects.filter(server=server).count()
        server = server_update(server=server, data={"args": ["--tools", "25", "--page-size", "4", "--crash-on-page", "2"]})
        with pytest.raises(mcp.McpError, match=r"exited with status 3 during tools/list \(page 2\)"):
            catalog_sync(server=server)
        server.refresh_from_db()
        after = list(Tool.objects.filter(server=server).order_by("position").values_list(
            "pk", "name", "position", "definition_hash", "certification", "certified_hash", "removed_in"))
        versions = list(CatalogVersion.objects.filter(server=server).values_list("pk", flat=True))
        findings_after = Finding.objects.filter(server=server).count()
    assert [name for _pk, name, *_rest in before] == [tool["name"] for tool in make_tools(25)]
    assert [position for _pk, _name, position, *_rest in before] == list(range(25))
    assert {certification for *_rest, certification, _hash, _removed in before} == {"certified"}
    assert first.tool_count == 25 and versions == [first.pk]
    assert after == before and findings_after == findings_before
    assert server.sync_status == "error" and "simulated crash on page 2" in server.sync_error
    assert_reaped(pidfile, at_least=5)


def test_it_stores_a_paginated_http_catalog_whole_and_in_order(alpha, inventario):
    """M5, C7: tools/list is followed through every cursor; each full definition is stored as
    the server sent it, in the server's order, and certified."""
    tools = make_tools(120)
    server_app = streamable_app(build_catalog_server(tools, page_size=7))
    with serve_asgi(server_app) as url:
        server = register_http(alpha, "streamable_http", f"{url}/mcp")
        with alpha.schema():
            version = catalog_sync(server=server)
            rows = list(Tool.objects.filter(server=server).order_by("position"))
    assert version.tool_count == 120 and version.diff["added"] == [tool["name"] for tool in tools]
    assert [row.definition for row in rows] == tools
    assert [row.position for row in rows] == list(range(120))
    assert {row.certification for row in rows} == {"certified"}
    assert version.server_findings == []  # read twice, same order


def everything_stdio(world):
    approve("everything", NODE, ENTRY, "stdio")
    return register_stdio(world, "everything", slug="everything", timeout=10.0)


@requires_everything
@pytest.mark.parametrize("transport", ["stdio", "sse", "streamable_http"])
def test_it_syncs_server_everything_in_compatible_mode_with_its_safe_tools_available(alpha, transport):
    """M3, M4, M5, C3, C4, C6, G4: the real third-party server (TypeScript SDK 1.x) over each
    transport is detected as legacy (a visible finding on the version), its 13 tools are stored
    in its order, it starts in compatible mode, and every tool but the one that requires MCP
    tasks is available right after the first sync (issue 8)."""
    if transport == "stdio":
        server = everything_stdio(alpha)
        version = _sync_and_check(alpha, server)
    else:
        mode, path = ("sse", "/sse") if transport == "sse" else ("streamableHttp", "/mcp")
        with serve_everything(mode) as base_url:
            server = register_http(alpha, transport, f"{base_url}{path}", slug="everything")
            version = _sync_and_check(alpha, server)
    assert version.tool_count == TOOL_COUNT


def _sync_and_check(world, server):
    with world.schema():
        version = catalog_sync(server=server)
        server.refresh_from_db()
        tools = list(Tool.objects.filter(server=server).select_related("server").prefetch_related("findings").order_by("position"))
        server_rows = list(Finding.objects.filter(server=server, tool__isnull=True).values_list("rule", flat=True))
    assert server.sync_status == "ok" and server.is_legacy is True
    assert server.protocol_version == "2025-11-25" and server.discover_result is None
    assert [finding["rule"] for finding in version.server_findings] == ["legacy_protocol"] == server_rows
    assert "2025-11-25" in version.server_findings[0]["texts"]["en"]["message"]
    assert [tool.name for tool in tools] == EVERYTHING_TOOLS
    assert tools[0].prefixed_name == "everything__echo"
    # Compatible mode (no `com.asixto/` _meta anywhere): what the gateway enforces itself only warns,
    # so every safe tool is available right after the first sync; the task-only tool is blocked (G4).
    assert server.contract_mode == "compatible"
    for tool in tools:
        findings = list(tool.findings.all())
        if tool.name == "simulate-research-query":
            assert [f.rule for f in findings if f.severity == "blocking"] == ["G4"]
            assert tool.certification == "blocked" and not tool.is_available_to_agents
            continue
        assert [f.rule for f in findings if f.severity == "blocking"] == [], tool.name
        assert {f.severity for f in findings if f.rule == "C6"} == {"warning"}, tool.name
        assert tool.certification == "certified" and tool.is_available_to_agents, tool.name
        assert tool.definition["inputSchema"]["additionalProperties"] is False  # closed by the gateway
        assert "additionalProperties" not in tool.server_definition["inputSchema"]  # the server's, untouched
        assert tool.definition["_meta"]["com.asixto/suggested"] == ["verb", "capabilities"]
    return version
