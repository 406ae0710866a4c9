"""The published npm MCP servers `@modelcontextprotocol/server-memory` and
`@modelcontextprotocol/server-filesystem` (pinned in package.json) as a tenant admin brings them in
(issue 8; M1, M3, M5, C1–C9, G2, G6), approved as an operator would: memory keeps its graph in
`MEMORY_FILE_PATH={workdir}/memory.json`, filesystem is confined to `{workdir}`. The first sync
puts each in compatible mode with the fair findings only and every tool that is not unsafe
available at once; a call through the gateway answers what a direct SDK call to the same server
(same argv and environment, a process of its own) answers; the admin's overlays survive the next
sync. Tenant isolation of these two is in test_stdio_tenant_isolation.py."""

import pytest
from django.utils import translation

from tests.support.everything import NODE
from tests.support.published_peers import (
    FILESYSTEM,
    MEMORY,
    NODE_CEILING,
    assert_fair_first_sync,
    assert_overlays_survive_sync,
    direct_call,
    gateway_call,
    register,
    requires_node_servers,
)
from tools.models import ToolCall
from tools.servers import server_target

pytestmark = requires_node_servers

# What each server's tools are, as its annotations say and as C5 must read them: filesystem
# marks write_file, edit_file and move_file destructiveHint (they overwrite or remove a file).
LEVELS = {
    "memory": {
        "read_graph": "read", "search_nodes": "read", "open_nodes": "read",
        "create_entities": "write", "create_relations": "write", "add_observations": "write",
        "delete_entities": "destructive", "delete_observations": "destructive", "delete_relations": "destructive",
    },
    "filesystem": {
        "read_file": "read", "read_text_file": "read", "read_media_file": "read", "read_multiple_files": "read",
        "list_directory": "read", "list_directory_with_sizes": "read", "directory_tree": "read",
        "search_files": "read", "get_file_info": "read", "list_allowed_directories": "read",
        "create_directory": "write",
        "write_file": "destructive", "edit_file": "destructive", "move_file": "destructive",
    },
}
NOT_LEADING_WITH_A_VERB = {"memory": set(), "filesystem": {"directory_tree"}}


@pytest.fixture(autouse=True)
def english():
    with translation.override("en"):
        yield


def register_npm(world, slug):
    """The operator's approval, as test_stdio_tenant_isolation.py makes it."""
    if slug == "memory":
        return register(world, slug, (NODE, str(MEMORY)), fixed_env={"MEMORY_FILE_PATH": "{workdir}/memory.json"},
                        timeout_seconds=NODE_CEILING)
    return register(world, slug, (NODE, str(FILESYSTEM), "{workdir}"), timeout_seconds=NODE_CEILING)


def workdir(world, server) -> str:
    """The filesystem server's allowed directory: its {workdir}, the last approved argument."""
    with world.schema():
        return server_target(server).argv[-1]


@pytest.mark.parametrize("slug", ["memory", "filesystem"])
def test_the_first_sync_finds_only_the_fair_findings_and_every_safe_tool_is_available(alpha, slug):
    """M3, M5, C1–C9, issue 8: compatible mode; levels as the annotations say (open_nodes reads,
    create_entities writes, delete_entities and write_file destroy); no blocking finding, no
    "not idempotent" on a read tool, no C1 on a name that leads with a verb; every tool available
    at once with a suggested verb; the warnings all tools share are server-level rows in the API."""
    server = register_npm(alpha, slug)
    tools = assert_fair_first_sync(alpha, server, LEVELS[slug])
    # Names that lead with a verb ("read", "open", "search", "list", "get") pass C1; only the noun
    # phrase "directory_tree" is a (fair) warning.
    unnamed = {tool.name for tool in tools.values() for f in tool.findings.all() if f.rule == "C1"}
    assert unnamed == NOT_LEADING_WITH_A_VERB[slug]


def test_server_memory_answers_through_the_gateway_as_it_answers_a_direct_call(alpha):
    """G2, G6, C4, issue 8: create_entities through the gateway (a write, run once), then
    read_graph and open_nodes through the gateway and directly agree on the same memory file; an
    unknown argument to its open schema never reaches the server."""
    server = register_npm(alpha, "memory")
    entity = {"name": "Cliente Acme", "entityType": "cliente", "observations": ["paga a 30 días"]}
    created, record = gateway_call(alpha, "memory__create_entities", {"entities": [entity]})
    assert created.ok, (created.outcome, created.error)
    assert record.outcome == "ok" and record.attempts == 1

    for name, arguments in (("read_graph", {}), ("open_nodes", {"names": ["Cliente Acme"]})):
        outcome, record = gateway_call(alpha, f"memory__{name}", arguments)
        assert outcome.ok, (name, outcome.outcome, outcome.error)
        direct = direct_call(alpha, server, name, arguments, timeout=NODE_CEILING)
        assert outcome.structured == direct["structuredContent"], name
        assert [e["name"] for e in outcome.structured["entities"]] == ["Cliente Acme"], name
        assert record.outcome == "ok"

    refused, record = gateway_call(alpha, "memory__read_graph", {"depth": 2})
    assert refused.outcome == ToolCall.Outcome.INVALID_ARGUMENTS and refused.attempts == 0
    assert record.outcome == "invalid_arguments"


def test_server_filesystem_answers_through_the_gateway_as_it_answers_a_direct_call(alpha):
    """G2, G6, issue 8: write_file through the gateway inside {workdir}, then read_text_file and
    list_directory through the gateway and directly agree; a path outside {workdir} is the
    server's own error, which reaches the model and the record."""
    server = register_npm(alpha, "filesystem")
    root = workdir(alpha, server)
    written, record = gateway_call(alpha, "filesystem__write_file", {"path": f"{root}/horario.txt", "content": "De 8 a 18"})
    assert written.ok, (written.outcome, written.error)
    assert record.outcome == "ok" and record.attempts == 1

    for name, arguments in (("read_text_file", {"path": f"{root}/horario.txt"}), ("list_directory", {"path": root})):
        outcome, record = gateway_call(alpha, f"filesystem__{name}", arguments)
        assert outcome.ok, (name, outcome.outcome, outcome.error)
        direct = direct_call(alpha, server, name, arguments, timeout=NODE_CEILING)
        assert direct.get("isError") is not True, direct
        assert outcome.structured == direct["structuredContent"], name
        assert outcome.model_text == direct["content"][0]["text"], name
        assert record.outcome == "ok"
    assert "De 8 a 18" in gateway_call(alpha, "filesystem__read_text_file", {"path": f"{root}/horario.txt"})[0].model_text
    assert "horario.txt" in gateway_call(alpha, "filesystem__list_directory", {"path": root})[0].model_text

    outside, record = gateway_call(alpha, "filesystem__list_directory", {"path": "/etc"})
    assert outside.outcome == "business_error", (outside.outcome, outside.error)
    assert "denied" in outside.model_text.lower() and "denied" in record.error.lower()


OVERLAYS = {
    "memory": ("search_nodes", {"verb": "buscar en la memoria", "description": "Busca clientes y notas guardados. No los cambia."}),
    "filesystem": ("read_text_file", {"verb": "leer un archivo", "description": "Lee un archivo de texto de la carpeta del servidor. No lo cambia."}),
}
RAISED = {"memory": "add_observations", "filesystem": "create_directory"}


@pytest.mark.parametrize("slug", ["memory", "filesystem"])
def test_the_admins_overlays_through_the_api_survive_the_next_sync(alpha, slug):
    """C5, C6, M5, issue 8: one tool edited (verb, model-facing description), the others'
    suggestions accepted for the whole server, a write level raised to destructive: after the
    next sync all of it stands, certified on the effective definition."""
    server = register_npm(alpha, slug)
    name, changes = OVERLAYS[slug]
    assert_overlays_survive_sync(alpha, server, name, changes, raised=RAISED[slug])


def test_the_servers_own_directory_in_an_answer_is_not_taken_for_a_leaked_id(alpha):
    """G7, M3, issue 8: the private directory a filesystem server names in its answers is the
    platform's own layout, not an internal id the server leaked: the model reads it as the server
    wrote it, and no violation is recorded against the server."""
    server = register_npm(alpha, "filesystem")
    root = workdir(alpha, server)
    for name, arguments in (("list_allowed_directories", {}),
                            ("write_file", {"path": f"{root}/horario.txt", "content": "De 8 a 18"})):
        outcome, record = gateway_call(alpha, f"filesystem__{name}", arguments)
        assert outcome.ok, (name, outcome.outcome, outcome.error)
        assert root in outcome.model_text and "[id removed]" not in outcome.model_text, outcome.model_text
        assert record.violations == [], record.violations
