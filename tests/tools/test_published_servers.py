"""The published Python MCP servers `mcp-server-time`, `mcp-server-fetch` and `mcp-server-git`
(PyPI, pinned in requirements-peers.txt, run from .peers) as a tenant admin brings them in (issue 8;
M1, M3, M5, C1–C9, G2, G6): an operator approves the command, the admin registers the server
through the API, and the first sync (the task the API queues) puts it in compatible mode with the
fair findings only, every tool that is not unsafe available at once. A call through the gateway
answers what a direct SDK call to the same server answers, and the admin's overlays made through
the API survive the next sync. server-everything (npm) is covered in test_contract_overlays.py."""

import subprocess

import pytest
from django.utils import translation

from tests.support.mcp_servers import serve_asgi
from tests.support.public_web import PublicWeb
from tests.support.published_peers import (
    assert_fair_first_sync,
    assert_overlays_survive_sync,
    direct_call,
    gateway_call,
    register,
)
from tests.support.python_peers import peer_argv, requires_python_peers
from tools.models import ToolCall

pytestmark = requires_python_peers

# What each server's tools are, as its annotations say and as C5 must read them.
LEVELS = {
    "time": {"get_current_time": "read", "convert_time": "read"},
    "fetch": {"fetch": "read"},
    "git": {
        "git_status": "read", "git_diff_unstaged": "read", "git_diff_staged": "read", "git_diff": "read",
        "git_log": "read", "git_show": "read", "git_branch": "read",
        "git_add": "write", "git_commit": "write", "git_create_branch": "write", "git_checkout": "write",
        "git_reset": "destructive",
    },
}


@pytest.fixture(autouse=True)
def english():
    with translation.override("en"):
        yield


@pytest.fixture
def repository(tmp_path):
    """A small git repository the git server is confined to: one commit and one unstaged change."""
    path = tmp_path / "repo"
    git = ["git", "-C", str(path), "-c", "user.name=Ana", "-c", "user.email=ana@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    (path / "README.md").write_text("Horario de la biblioteca\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Primer horario"], check=True)
    (path / "README.md").write_text("Horario de la biblioteca: de 8 a 18\n")
    return path


def peer_command(slug, repository=None):
    """The operator's fixed arguments: a fixed local time zone (deterministic answers), loopback
    pages for fetch (its default refuses private addresses), the repository git is confined to."""
    if slug == "time":
        return peer_argv("mcp-server-time", "--local-timezone", "Europe/Madrid")
    if slug == "fetch":
        return peer_argv("mcp-server-fetch", "--allow-private-ips", "--ignore-robots-txt")
    return peer_argv("mcp-server-git", "--repository", str(repository))


@pytest.mark.parametrize("slug", ["time", "fetch", "git"])
def test_the_first_sync_finds_only_the_fair_findings_and_every_safe_tool_is_available(alpha, slug, repository):
    """M3, M5, C1–C9, issue 8: compatible mode (none of them declares our `_meta`); the levels
    are the annotations' (git_status reads, git_add and git_commit write, git_reset destroys); no
    blocking finding, no "not idempotent" on a read tool; every tool is available at once, with
    a suggested verb; the warnings all tools share are server-level rows in the API (git)."""
    server = register(alpha, slug, peer_command(slug, repository))
    assert server.protocol_version == "2026-07-28" and not server.is_legacy
    tools = assert_fair_first_sync(alpha, server, LEVELS[slug])
    if slug == "time":  # both names start with a verb ("convert" leads a name too)
        assert [f.rule for t in tools.values() for f in t.findings.all() if f.rule == "C1"] == []


def test_mcp_server_time_answers_through_the_gateway_as_it_answers_a_direct_call(alpha):
    """G2, G6, C4, issue 8: a structured result (outputSchema) comes back as the server sent it;
    an unknown argument to its open schema never reaches the server."""
    server = register(alpha, "time", peer_command("time"))
    arguments = {"source_timezone": "Europe/Madrid", "time": "12:00", "target_timezone": "America/New_York"}
    outcome, record = gateway_call(alpha, "time__convert_time", arguments)
    direct = direct_call(alpha, server, "convert_time", arguments)
    assert outcome.ok, (outcome.outcome, outcome.error)
    assert outcome.structured == direct["structuredContent"]
    assert outcome.structured["target"]["timezone"] == "America/New_York" and record.outcome == "ok"

    now, _record = gateway_call(alpha, "time__get_current_time", {"timezone": "Asia/Tokyo"})
    assert now.ok and now.structured["timezone"] == "Asia/Tokyo"

    refused, record = gateway_call(alpha, "time__get_current_time", {"timezone": "Asia/Tokyo", "format": "iso"})
    assert refused.outcome == ToolCall.Outcome.INVALID_ARGUMENTS and refused.attempts == 0
    assert record.outcome == "invalid_arguments"


def test_mcp_server_fetch_answers_through_the_gateway_as_it_answers_a_direct_call(alpha):
    """G2, G6, C4, issue 8: a loopback page served by the test, fetched by the server itself (the
    server's own HTTP client, outside Asixto's outbound rules: the operator's --allow-private-ips
    is what lets it reach loopback); text results without outputSchema reach the model."""
    server = register(alpha, "fetch", peer_command("fetch"))
    web = PublicWeb()
    with serve_asgi(web.app()) as url:
        arguments = {"url": f"{url}/page"}
        outcome, record = gateway_call(alpha, "fetch__fetch", arguments)
        direct = direct_call(alpha, server, "fetch", arguments)
    assert outcome.ok, (outcome.outcome, outcome.error)
    assert direct.get("isError") is not True
    assert outcome.model_text == direct["content"][0]["text"]
    assert "Abre de lunes a viernes" in outcome.model_text and "not text" not in outcome.model_text
    assert web.requests.count("/page") == 2 and record.outcome == "ok"


def test_mcp_server_fetch_refuses_loopback_by_default_and_the_model_reads_why(alpha):
    """G6, M2, issue 8: approved without --allow-private-ips (as operators should), the server
    refuses a loopback page itself; its plain-text refusal reaches the model and the record."""
    register(alpha, "fetch", peer_argv("mcp-server-fetch", "--ignore-robots-txt"))
    web = PublicWeb()
    with serve_asgi(web.app()) as url:
        outcome, record = gateway_call(alpha, "fetch__fetch", {"url": f"{url}/page"})
    assert outcome.outcome == "business_error", (outcome.outcome, outcome.error)
    assert "not a public address" in outcome.model_text and "not a public address" in record.error
    assert web.requests == []


def test_mcp_server_git_answers_through_the_gateway_as_it_answers_a_direct_call(alpha, repository):
    """G2, G6, issue 8: git_status and git_log on the repository the operator confined it to;
    a repository outside it is the server's plain-text error, which reaches the model and the
    record (compatible mode) instead of being lost."""
    server = register(alpha, "git", peer_command("git", repository))
    for name, arguments in (("git_status", {"repo_path": str(repository)}),
                            ("git_log", {"repo_path": str(repository), "max_count": 5})):
        outcome, record = gateway_call(alpha, f"git__{name}", arguments)
        direct = direct_call(alpha, server, name, arguments)
        assert outcome.ok, (name, outcome.outcome, outcome.error)
        assert outcome.model_text == direct["content"][0]["text"], name
        assert record.outcome == "ok"
    assert "README.md" in gateway_call(alpha, "git__git_status", {"repo_path": str(repository)})[0].model_text

    outside, record = gateway_call(alpha, "git__git_status", {"repo_path": "/etc"})
    assert outside.outcome == "business_error", (outside.outcome, outside.error)
    assert "outside the allowed repository" in outside.model_text
    assert "outside the allowed repository" in record.error


def test_a_write_tool_of_mcp_server_git_changes_the_repository_through_the_gateway(alpha, repository):
    """G2, M7, issue 8: git_create_branch (a write, available in compatible mode) runs once and
    its branch is in the repository afterwards."""
    register(alpha, "git", peer_command("git", repository))
    arguments = {"repo_path": str(repository), "branch_name": "horario-verano"}
    outcome, record = gateway_call(alpha, "git__git_create_branch", arguments)
    assert outcome.ok, (outcome.outcome, outcome.error)
    assert record.outcome == "ok" and record.attempts == 1
    branches = subprocess.run(["git", "-C", str(repository), "branch", "--list"], capture_output=True, text=True, check=True)
    assert "horario-verano" in branches.stdout


OVERLAYS = {
    "time": ("get_current_time", {"verb": "consultar la hora", "description": "Da la hora actual en una zona horaria. No convierte horas."}),
    "fetch": ("fetch", {"verb": "leer una página web", "description": "Lee una página web y la devuelve como texto. No envía formularios."}),
    "git": ("git_status", {"verb": "consultar el estado del repositorio", "description": "Muestra los cambios sin confirmar. No los confirma."}),
}


@pytest.mark.parametrize("slug", ["time", "fetch", "git"])
def test_the_admins_overlays_through_the_api_survive_the_next_sync(alpha, slug, repository):
    """C5, C6, M5, issue 8: one tool edited (verb, model-facing description), the others'
    suggestions accepted for the whole server, a write level raised to destructive: after the
    next sync all of it stands, certified on the effective definition."""
    server = register(alpha, slug, peer_command(slug, repository))
    name, changes = OVERLAYS[slug]
    assert_overlays_survive_sync(alpha, server, name, changes, raised="git_commit" if slug == "git" else None)
