"""stdio MCP servers (M3) cannot read the platform's secrets, and nothing they start outlives
them — real SDK servers as children, through the real transport.

The platform here is the test process itself: it imported the project, so it is non-dumpable
like the web and worker processes. A server reports what it can see through its one tool's
`_meta` (tests/support/catalog_server.py --introspect), including what it got when it tried to
read /proc/<platform pid>/environ."""

import json
import os
import pwd
import signal
import socket
import stat
import subprocess
import sys
from contextlib import suppress
from pathlib import Path
from urllib.parse import urlsplit

import mcp
import pytest

from tests.support.catalog_server import PEEK_VAR
from tools.mcp import McpError, ServerTarget, list_tools
from tools.mcp.stdio import stdio_user

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "tests" / "support" / "catalog_server.py")
CEILING = 60.0  # per request: importing the SDK alone takes over a second on a loaded machine
NO_CAPABILITIES = "0000000000000000"


def introspect(*, python=sys.executable, env=None):
    target = ServerTarget(
        transport="stdio", argv=(python, SCRIPT, "--introspect"), env={PEEK_VAR: str(os.getpid()), **(env or {})},
        timeout=CEILING,
    )
    (tool,) = list_tools(target)
    return tool["_meta"]


def test_a_server_kept_on_the_platforms_user_has_no_capability(monkeypatch):
    """M3, T7: kept on the platform's user (ASIXTO_STDIO_USER empty), a server of a root
    platform holds no capability, so the platform's /proc environment is refused to it."""
    monkeypatch.setenv("ASIXTO_STDIO_USER", "")
    meta = introspect()
    assert meta["com.example/uid"] == os.getuid()
    assert meta["com.example/peek"][str(os.getpid())].startswith("refused")
    if os.geteuid() == 0:
        assert meta["com.example/capabilities"] == NO_CAPABILITIES


def _without_capabilities():
    # Runs in the forked child before exec: the platform process gets exactly what its
    # server will get (root without capabilities), so only dumpability tells them apart.
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/sys/kernel/cap_last_cap") as last:
        for capability in range(int(last.read()) + 1):
            libc.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP


def test_a_platform_process_is_not_readable_by_a_server_of_the_same_user(tmp_path):
    """M3, T7: a platform process and its server with the same user and the same (no)
    capabilities, as when the platform does not run as root: the platform imported the project,
    which made it non-dumpable, so the server cannot read the secret in its environment."""
    secret = "asixto-platform-secret-7f3a9c"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ASIXTO_STDIO_USER": "", "PLATFORM_SECRET": secret}
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "stdio_platform.py"), sys.executable, SCRIPT, "--introspect"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=2 * CEILING,
        preexec_fn=_without_capabilities if os.geteuid() == 0 else None,
    )
    assert done.returncode == 0, done.stderr
    (tool,) = json.loads(done.stdout)
    peeks = tool["_meta"]["com.example/peek"]  # the platform's and the supervisor's
    assert len(peeks) == 2 and all(value.startswith("refused") for value in peeks.values())
    assert secret not in json.dumps(peeks)


def _readable_by_others(path: Path, mode_bits: int) -> bool:
    """Every folder on the way can be entered by others and the file has `mode_bits` for them."""
    path = path.resolve()
    if not path.stat().st_mode & mode_bits:
        return False
    return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.parents)


def interpreter_for_others():
    """A Python of this version that an unprivileged user may run, and the PYTHONPATH that lets
    it import the SDK; None if this machine has none."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    site_packages = Path(mcp.__file__).resolve().parents[1]
    if not (_readable_by_others(site_packages, stat.S_IROTH) and _readable_by_others(Path(SCRIPT), stat.S_IROTH)):
        return None
    for candidate in (sys.executable, f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        if Path(candidate).exists() and _readable_by_others(Path(candidate), stat.S_IXOTH):
            return candidate, {"PYTHONPATH": str(site_packages)}
    return None


@pytest.mark.skipif(os.geteuid() != 0, reason="only a platform running as root can run servers as another user")
def test_a_root_platform_runs_servers_as_an_unprivileged_user_in_a_directory_of_their_own(monkeypatch):
    """M3, T7: as root, the server runs as the stdio user (`nobody` unless configured), in a
    private working directory it owns and may write to, with no capability; the platform's
    /proc environment is refused to it."""
    found = interpreter_for_others()
    if found is None:
        pytest.skip("no Python here that an unprivileged user may run with the SDK")
    python, env = found
    monkeypatch.delenv("ASIXTO_STDIO_USER", raising=False)
    nobody = pwd.getpwnam("nobody")
    expected = stdio_user()
    assert expected is not None and expected[0] != 0
    monkeypatch.setenv("ASIXTO_STDIO_USER", "nobody")
    meta = introspect(python=python, env=env)
    assert meta["com.example/uid"] == nobody.pw_uid
    assert meta["com.example/cwdOwner"] == nobody.pw_uid and meta["com.example/cwdWritable"] is True
    assert meta["com.example/capabilities"] == NO_CAPABILITIES
    assert meta["com.example/peek"][str(os.getpid())].startswith("refused")


@pytest.mark.skipif(os.geteuid() != 0, reason="the stdio user is read only by a platform running as root")
def test_it_refuses_to_start_a_server_when_the_stdio_user_does_not_exist(monkeypatch):
    """M3: a misconfigured stdio user is a clear error; the server is not run as root instead."""
    monkeypatch.setenv("ASIXTO_STDIO_USER", "no-such-user-asixto")
    with pytest.raises(McpError) as caught:
        introspect()
    assert caught.value.kind == "process"
    assert "there is no user no-such-user-asixto" in caught.value.message


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


@pytest.mark.parametrize(("how", "behaviour"), [("setsid", "answers"), ("group", "answers"), ("setsid", "hangs")])
def test_nothing_a_server_started_outlives_it(tmp_path, how, behaviour):
    """M3: a server that leaves a helper behind — in a session of its own (`setsid`) or in a
    process group of its own — that ignores SIGTERM: once the call is over (answered, or a
    server that hangs and is stopped), the helper and the server are both gone, not even
    zombies."""
    helper_pidfile, server_pidfile = tmp_path / "helper.pid", tmp_path / "server.pid"
    args = ["--spawn-helper", how, "--helper-pidfile", str(helper_pidfile), "--pidfile", str(server_pidfile)]
    if behaviour == "hangs":
        args.append("--hang")
    target = ServerTarget(transport="stdio", argv=(sys.executable, SCRIPT, *args), timeout=10.0 if behaviour == "hangs" else CEILING)
    try:
        if behaviour == "hangs":
            with pytest.raises(McpError) as caught:
                list_tools(target)
            assert caught.value.kind == "timeout"
        else:
            assert len(list_tools(target)) == 3
        helper, server = int(helper_pidfile.read_text()), int(server_pidfile.read_text())
        assert _gone(server), "the server is still there"
        assert _gone(helper), f"the {how} helper outlived its server"
    finally:
        for pidfile in (helper_pidfile, server_pidfile):
            with suppress(OSError, ValueError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)


@pytest.mark.skipif(os.geteuid() != 0, reason="only a platform running as root runs servers as users it can fence")
def test_a_server_cannot_reach_the_platforms_database_or_redis(monkeypatch, settings):
    """Issue 19 H1: a stdio server running as a tenant uid gets no TCP connection to the
    platform's PostgreSQL and Redis ports (IPv4 and IPv6 loopback) and finds no PostgreSQL socket,
    while a loopback port that is not the platform's still answers it (the fence is targeted)."""
    from tests.support.catalog_server import REACH_VAR

    found = interpreter_for_others()
    if found is None:
        pytest.skip("no Python here that an unprivileged user may run with the SDK")
    python, env = found
    settings.ASIXTO_STDIO_UID_BASE = 300000
    settings.ASIXTO_STDIO_FENCE = True
    database = settings.DATABASES["default"]
    redis_port = urlsplit(settings.CACHES["default"]["LOCATION"]).port or 6379
    db_socket = f"/var/run/postgresql/.s.PGSQL.{database.get('PORT') or 5432}"
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        other_port = other.getsockname()[1]
        places = [f"127.0.0.1:{database.get('PORT') or 5432}", f"127.0.0.1:{redis_port}", f"[::1]:{redis_port}",
                  f"127.0.0.1:{other_port}", db_socket]
        target = ServerTarget(transport="stdio", argv=(python, SCRIPT, "--introspect"),
                              env={**env, REACH_VAR: ",".join(places)}, timeout=CEILING, user=(300001, 300001))
        (tool,) = list_tools(target)
    reach = tool["_meta"]["com.example/reach"]
    assert reach[f"127.0.0.1:{other_port}"] == "connected", reach
    for place in places:
        if place != f"127.0.0.1:{other_port}":
            assert reach[place].startswith("refused"), (place, reach)
    assert "No such file" in reach[db_socket] or not Path(db_socket).exists()
    assert Path(db_socket).exists() or not Path("/var/run/postgresql").exists()  # hidden from the server only
