"""Two tenants' stdio servers of one approved command never see each other's data (M3, T1,
issue 8): each server has its own private `{workdir}`, and, on a root platform, its own uid.

Real published servers, pinned in package.json: `@modelcontextprotocol/server-memory` with
`MEMORY_FILE_PATH={workdir}/memory.json`, and `@modelcontextprotocol/server-filesystem` whose
allowed directory is `{workdir}`. Every call starts the server afresh (tools.mcp), so data that
survives from one call to the next survived a restart of the server."""

import json
import os
import stat
from pathlib import Path

import pytest
from django.db import connection

from tenants.models import StdioAccount
from tenants.stdio_commands import approved_command_create
from tests.support.everything import NODE
from tests.support.published_peers import FILESYSTEM, MEMORY, NODE_CEILING, requires_node_servers
from tools import mcp
from tools.servers import server_create, server_target

pytestmark = requires_node_servers


def approve_memory():
    connection.set_schema_to_public()
    return approved_command_create(
        slug="server-memory", executable=NODE, base_args=[str(MEMORY)],
        fixed_env={"MEMORY_FILE_PATH": "{workdir}/memory.json"},
    )


def approve_filesystem():
    connection.set_schema_to_public()
    return approved_command_create(slug="server-filesystem", executable=NODE, base_args=[str(FILESYSTEM), "{workdir}"])


def register(world, command, slug="memoria"):
    with world.schema():
        return server_create(data={"slug": slug, "transport": "stdio", "command": command, "timeout_seconds": NODE_CEILING})


def call(world, server, name, arguments):
    with world.schema():
        target = server_target(server)
    return mcp.call_tool(target, name, arguments, meta={})


def graph(result) -> dict:
    return result.get("structuredContent") or json.loads(result["content"][0]["text"])


def test_two_tenants_memory_servers_never_share_a_graph_and_each_keeps_its_own(alpha, beta):
    """M3, T1, issue 8: tenant A's entities are not in tenant B's graph, and A's graph survives
    a restart of its server (every call here is a new process)."""
    approve_memory()
    mine, theirs = register(alpha, "server-memory"), register(beta, "server-memory")
    entity = {"name": "Cliente Acme", "entityType": "cliente", "observations": ["paga a 30 días"]}
    call(alpha, mine, "create_entities", {"entities": [entity]})

    assert graph(call(beta, theirs, "read_graph", {}))["entities"] == []
    assert [e["name"] for e in graph(call(alpha, mine, "read_graph", {}))["entities"]] == ["Cliente Acme"]
    found = graph(call(beta, theirs, "search_nodes", {"query": "Acme"}))
    assert found["entities"] == []
    # Each server's directory is its own, private, and where the memory file went.
    with alpha.schema():
        alpha_dir = Path(server_target(mine).env["MEMORY_FILE_PATH"]).parent
    with beta.schema():
        beta_dir = Path(server_target(theirs).env["MEMORY_FILE_PATH"]).parent
    assert alpha_dir != beta_dir and (alpha_dir / "memory.json").exists() and not (beta_dir / "memory.json").exists()
    assert stat.S_IMODE(alpha_dir.stat().st_mode) == 0o700 and stat.S_IMODE(beta_dir.stat().st_mode) == 0o700


def test_a_filesystem_server_cannot_list_another_tenants_directory(alpha, beta):
    """M3, T1, issue 8: the allowed directory is the server's own {workdir}; B's server refuses A's."""
    approve_filesystem()
    mine, theirs = register(alpha, "server-filesystem", "archivos"), register(beta, "server-filesystem", "archivos")
    with alpha.schema():
        (alpha_dir,) = [arg for arg in server_target(mine).argv[2:]]
    call(alpha, mine, "write_file", {"path": f"{alpha_dir}/pedido.txt", "content": "pedido secreto de A"})
    assert "pedido.txt" in json.dumps(call(alpha, mine, "list_directory", {"path": alpha_dir}))

    listed = call(beta, theirs, "list_directory", {"path": alpha_dir})
    read = call(beta, theirs, "read_text_file", {"path": f"{alpha_dir}/pedido.txt"})
    for answer in (listed, read):
        assert answer.get("isError") is True
        assert "pedido.txt" not in json.dumps(answer) or "denied" in json.dumps(answer).lower()
        assert "pedido secreto" not in json.dumps(answer)
    with beta.schema():
        (beta_dir,) = [arg for arg in server_target(theirs).argv[2:]]
    assert "pedido.txt" not in json.dumps(call(beta, theirs, "list_directory", {"path": beta_dir}))


@pytest.mark.skipif(os.geteuid() != 0, reason="only a platform running as root can give each server a uid of its own")
def test_on_a_root_platform_each_tenant_server_runs_as_its_own_user(alpha, beta, settings):
    """M3, T1, issue 7: as root, each (tenant, server) runs as ASIXTO_STDIO_UID_BASE + its own
    number and owns its directory; another server's uid can neither list nor read it."""
    settings.ASIXTO_STDIO_UID_BASE = 3_000_000
    approve_memory()
    mine, theirs = register(alpha, "server-memory"), register(beta, "server-memory")
    call(alpha, mine, "create_entities", {"entities": [{"name": "Acme", "entityType": "cliente", "observations": []}]})
    assert graph(call(beta, theirs, "read_graph", {}))["entities"] == []
    with alpha.schema():
        alpha_target = server_target(mine)
    with beta.schema():
        beta_target = server_target(theirs)
    accounts = {row.server_id: row.pk for row in StdioAccount.objects.filter(server_id__in=[mine.pk, theirs.pk])}
    assert alpha_target.user == (3_000_000 + accounts[mine.pk],) * 2
    assert beta_target.user == (3_000_000 + accounts[theirs.pk],) * 2
    assert alpha_target.user != beta_target.user

    alpha_dir = Path(alpha_target.env["MEMORY_FILE_PATH"]).parent
    info = alpha_dir.stat()
    assert (info.st_uid, info.st_gid) == alpha_target.user and stat.S_IMODE(info.st_mode) == 0o700
    assert (alpha_dir / "memory.json").stat().st_uid == alpha_target.user[0]  # written by the server itself
    # What B's uid gets when it tries A's directory: a real process of that uid, no capability.
    assert _as_user(beta_target.user, alpha_dir) == "refused"
    assert _as_user(alpha_target.user, alpha_dir) == "listed"


def _as_user(user, directory) -> str:
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            os.setgroups([])
            os.setgid(user[1])
            os.setuid(user[0])
            try:
                os.listdir(directory)
                (directory / "memory.json").read_bytes()
                code = 0
            except PermissionError:
                code = 1
        finally:
            os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    return {0: "listed", 1: "refused"}.get(os.waitstatus_to_exitcode(status), "failed")
