"""The connection layer over stdio (M3, M4, M5): a real SDK server as a child process.

Every failure test checks the child is gone afterwards, not even a zombie: the test server
writes its pid to a file the test names (through the explicit environment), and
/proc/<pid>/status must no longer exist once the call has returned.

No test bounds wall-clock time (that belongs in bench/): importing the SDK alone takes over a
second on a loaded machine, so servers that should answer get a generous per-request limit,
and servers that should time out are reached with their discovery result cached, so the
request that times out is always the one under test.
"""

import os
import sys
from pathlib import Path

import pytest
from django.utils import translation

from tests.support.catalog_server import PIDFILE_VAR, SECRET_VAR, make_tools
from tests.support.faults import MODERN_DISCOVER
from tools.mcp import McpError, ServerTarget, list_tools, probe

SCRIPT = str(Path(__file__).resolve().parents[1] / "support" / "catalog_server.py")
CEILING = 60.0  # seconds per request for servers that answer
EXPECTED_TIMEOUT = 3.0  # for servers that never answer: any value works, the test waits it out


@pytest.fixture(autouse=True)
def _in_english():
    """These tests read the English messages (the interface's default language is Spanish)."""
    with translation.override("en"):
        yield


def server(*args, env=None, **fields):
    fields.setdefault("timeout", CEILING)
    return ServerTarget(transport="stdio", argv=(sys.executable, SCRIPT, *args), env=env or {}, **fields)


def watched(tmp_path, *args, **fields):
    """A target whose child reports its pid; returns (target, function reading that pid)."""
    pidfile = tmp_path / "child.pid"
    env = {PIDFILE_VAR: str(pidfile), **fields.pop("env", {})}
    return server(*args, env=env, **fields), lambda: int(pidfile.read_text())


def assert_reaped(pid):
    status = Path(f"/proc/{pid}/status")
    if status.exists():  # pragma: no cover - the failure message is the point
        state = next((line for line in status.read_text().splitlines() if line.startswith("State:")), "?")
        pytest.fail(f"child {pid} still exists after the call ({state})")


def test_it_probes_a_modern_stdio_server_and_lists_every_page_in_order(tmp_path):
    """M4, M5: over stdio a 2026-07-28 server answers server/discover; tools/list is followed
    through its cursors and the tools come back in the server's order, in wire form."""
    target, pid = watched(tmp_path, "--tools", "7", "--page-size", "3")
    found = probe(target)
    assert (found.protocol_version, found.legacy) == ("2026-07-28", False)
    assert found.discover["supportedVersions"] == ["2026-07-28"]
    assert found.server_info["name"] == "asixto-test-catalog"
    assert_reaped(pid())

    tools = list_tools(server("--tools", "7", "--page-size", "3", discover=found.discover))
    assert tools == make_tools(7)


def test_it_detects_a_legacy_stdio_server_and_lists_through_the_handshake(tmp_path):
    """M4: a handshake-only server (SDK 1.x style) is detected as legacy and still listed."""
    target, pid = watched(tmp_path, "--legacy", "--tools", "4", "--page-size", "3")
    found = probe(target)
    assert found.legacy is True
    assert found.discover is None
    assert found.protocol_version == "2025-11-25"
    assert_reaped(pid())

    tools = list_tools(server("--legacy", "--tools", "4", "--page-size", "3", legacy=True))
    assert tools == make_tools(4)


def test_it_gives_the_child_only_the_explicit_environment_and_a_private_directory(monkeypatch):
    """M3: nothing of the platform's environment leaks into the child; it runs in a temp
    directory of its own, which is removed afterwards."""
    monkeypatch.setenv("ASIXTO_PLATFORM_SECRET", "must-not-leak")
    given = {"LANG": "C.UTF-8", "TENANT_SETTING": "valor"}
    (tool,) = list_tools(server("--introspect", env=given))
    child_env = tool["_meta"]["com.example/env"]
    child_cwd = tool["_meta"]["com.example/cwd"]
    assert child_env == given
    assert os.path.basename(child_cwd).startswith("asixto-mcp-")
    assert child_cwd != os.getcwd()
    assert not os.path.exists(child_cwd)


def test_it_runs_the_child_in_the_directory_the_target_names(tmp_path):
    """M3: an explicit working directory is used as given (and left in place)."""
    (tool,) = list_tools(server("--introspect", cwd=str(tmp_path)))
    assert tool["_meta"]["com.example/cwd"] == str(tmp_path)
    assert tmp_path.exists()


def test_it_kills_and_reaps_a_server_that_hangs(tmp_path):
    """M3, G3: a server that never answers (and ignores SIGTERM and stdin EOF) is a timeout,
    and its process is killed and reaped (by the kill on shutdown: it never exits by itself)."""
    target, pid = watched(tmp_path, "--hang", timeout=EXPECTED_TIMEOUT, discover=MODERN_DISCOVER)
    with pytest.raises(McpError) as caught:
        list_tools(target)
    assert caught.value.kind == "timeout"
    assert "did not answer tools/list in time" in caught.value.message
    assert_reaped(pid())


def test_it_reports_a_crash_mid_listing_with_the_exit_status_and_stderr(tmp_path):
    """M3: a server that dies on page 2 is a `process` error naming its exit status and its
    last stderr lines, with the environment's secret blanked out; no zombie is left."""
    secret = "tok-3f9a8c7e-secret"
    target, pid = watched(
        tmp_path, "--tools", "5", "--page-size", "2", "--crash-on-page", "2", env={SECRET_VAR: secret}
    )
    with pytest.raises(McpError) as caught:
        list_tools(target)
    error = caught.value
    assert error.kind == "process"
    assert "exited with status 3 during tools/list (page 2)" in error.message
    assert "simulated crash on page 2" in error.message
    assert secret not in error.message
    assert "[redacted]" in error.message
    assert_reaped(pid())


def test_it_drains_stderr_so_a_noisy_server_still_answers(tmp_path):
    """M3: 3 MB on stderr before answering would fill the pipe and block an undrained child;
    drained, the listing succeeds and the child is reaped."""
    target, pid = watched(tmp_path, "--flood-stderr", "3000000", "--tools", "2")
    assert len(list_tools(target)) == 2
    assert_reaped(pid())


def test_it_keeps_only_a_bounded_stderr_tail_of_a_server_that_floods_forever(tmp_path):
    """M3: a server flooding stderr without end is stopped at the time limit; the message
    carries only a short tail of its output; the child is reaped."""
    # Cached discovery, and time for the SDK import: the server floods from its start, so the
    # tail has noise once it times out.
    target, pid = watched(tmp_path, "--flood-forever", timeout=10.0, discover=MODERN_DISCOVER)
    with pytest.raises(McpError) as caught:
        list_tools(target)
    assert caught.value.kind == "timeout"
    assert "ruido" in caught.value.message
    assert len(caught.value.message) < 1500
    assert_reaped(pid())


def test_it_reports_a_program_that_cannot_start(tmp_path):
    """M3: a missing executable is a `process` error; nothing is left behind."""
    target = ServerTarget(transport="stdio", argv=(str(tmp_path / "no-such-server"),))
    with pytest.raises(McpError) as caught:
        probe(target)
    assert caught.value.kind == "process"
    assert "could not be started: No such file or directory" in caught.value.message


def test_it_reports_a_server_that_prints_on_stdout_as_a_protocol_error(tmp_path):
    """M3, M4: a stray print on stdout is not JSON-RPC: a clear protocol error at once, not a
    timeout, and the child is reaped."""
    target, pid = watched(tmp_path, "--noisy-stdout")
    with pytest.raises(McpError) as caught:
        probe(target)
    assert caught.value.kind == "protocol"  # at once: with a 60 s limit, a wait would be a timeout
    assert "not JSON-RPC" in caught.value.message and "Catalog server ready!" in caught.value.message
    assert_reaped(pid())
