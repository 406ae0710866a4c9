"""What keeps a stdio server away from the platform's own services (issue 19, H1).

A tenant's stdio server runs the tenant's configuration of an approved program; if it gets to
run commands of its own, it must still find no way into the platform's PostgreSQL and Redis
(trust auth on a socket, a Redis with no password or a pickle in a cache key are each enough
to take the platform over). When the platform runs as root, every server is fenced off:

- TCP: an iptables chain (and its ip6tables twin) rejects connections from the stdio users'
  uids (the `ASIXTO_STDIO_UID_BASE` range and the shared stdio user) to the ports of the
  platform's database, cache, broker and result store: on the loopback interface for local
  servers (any local address), to their addresses for remote ones. The chain is named after
  a hash of its rules, so platforms with different services on one machine keep their own, and
  installing it again is a no-op.
- Unix sockets: the server runs in a mount namespace of its own where the socket directories
  (`/run/postgresql`, `/run/redis`, and any the settings name) are covered by an empty tmpfs
  (tools/mcp/stdio_supervisor.py).

If either cannot be set up (no iptables, no CAP_NET_ADMIN or CAP_SYS_ADMIN in a container),
servers are not started and the error says so; `ASIXTO_STDIO_FENCE=0` runs them unfenced, for
an operator who isolates them another way. A platform that is not root (or lost CAP_SETUID) runs
servers as its own user, which has the platform's access anyway: nothing to fence there.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import shutil
import socket
import subprocess
import threading
from urllib.parse import urlsplit

UID_SPAN = 1 << 24  # uids of the own-user range the fence covers above ASIXTO_STDIO_UID_BASE
SOCKET_DIRS = ("/run/postgresql", "/var/run/postgresql", "/run/redis", "/var/run/redis")
DEFAULT_PORTS = {"postgres": 5432, "postgresql": 5432, "redis": 6379, "rediss": 6379, "amqp": 5672, "amqps": 5671}
_installed: set[tuple[str, str]] = set()
_lock = threading.Lock()


class FenceError(OSError):
    pass


CAP_SETUID = 7


def _can_switch_users() -> bool:
    # Root that kept CAP_SETUID: it runs servers as other users, and fences them.
    with open("/proc/self/status") as status:
        effective = next(int(line.split()[1], 16) for line in status if line.startswith("CapEff:"))
    return bool(effective >> CAP_SETUID & 1)


def enabled() -> bool:
    from django.conf import settings

    return os.geteuid() == 0 and _can_switch_users() and settings.ASIXTO_STDIO_FENCE


def platform_services() -> tuple[set[tuple[str, int]], set[str]]:
    """(host, port) of each TCP service the platform uses, and the directories of its Unix sockets."""
    from django.conf import settings

    tcp, dirs = set(), set(SOCKET_DIRS)
    database = settings.DATABASES["default"]
    host = database.get("HOST") or ""
    if host.startswith("/"):
        dirs.add(host)
    else:
        tcp.add((host or "localhost", int(database.get("PORT") or 5432)))
    urls = {settings.CACHES["default"]["LOCATION"], settings.CELERY_BROKER_URL, settings.CELERY_RESULT_BACKEND}
    for url in filter(None, urls):
        parts = urlsplit(url)
        if parts.scheme in ("unix", "redis+socket"):
            dirs.add(os.path.dirname(parts.path))
        elif parts.hostname and parts.scheme in DEFAULT_PORTS:
            tcp.add((parts.hostname, parts.port or DEFAULT_PORTS[parts.scheme]))
    return tcp, {os.path.realpath(path) for path in dirs}


def hidden_dirs(dirs: set[str]) -> list[str]:
    """Of the platform's socket directories, those that exist: a fenced server must not see them."""
    return sorted(path for path in dirs if os.path.isdir(path))


def _uid_specs(shared_uid: int | None) -> list[str]:
    from django.conf import settings

    specs = []
    base = settings.ASIXTO_STDIO_UID_BASE
    if base is not None:
        specs.append(f"{base}-{base + UID_SPAN - 1}")
    if shared_uid is not None and not (base is not None and base <= shared_uid < base + UID_SPAN):
        specs.append(str(shared_uid))
    return specs


def rules(shared_uid: int | None, tcp: set[tuple[str, int]]) -> dict[int, list[str]]:
    """IP version → the chain's rules for the platform's TCP services `tcp` (iptables-restore
    syntax, without the chain name)."""
    by_version: dict[int, set[str]] = {4: set(), 6: set()}
    for host, port in tcp:
        try:
            addresses = {info[4][0] for info in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)}
        except OSError:
            addresses = set()
        for address in addresses:
            ip = ipaddress.ip_address(address.split("%")[0])
            for version in ((4, 6) if ip.is_loopback else (ip.version,)):
                where = "-o lo" if ip.is_loopback else f"-d {ip}"
                by_version[version].add(f"{where} -p tcp --dport {port}")
    return {version: [f"{match} -m owner --uid-owner {uids} -j REJECT --reject-with tcp-reset"
                      for match in sorted(matches) for uids in _uid_specs(shared_uid)]
            for version, matches in by_version.items()}


def _run(argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=30, check=False)


def _install(tool: str, chain_rules: list[str]) -> None:
    chain = "ASIXTO-" + hashlib.sha256("\n".join(chain_rules).encode()).hexdigest()[:12]
    if (tool, chain) in _installed:
        return
    binary = shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")
    if binary is None:
        raise FenceError(f"{tool} is not installed: stdio servers cannot be fenced off the platform's database and Redis "
                         "(Debian: apt-get install iptables; or set ASIXTO_STDIO_FENCE=0 if they are isolated another way)")
    if _run([binary, "-w", "-n", "-L", chain]).returncode != 0:
        body = "".join(f"-A {chain} {rule}\n" for rule in chain_rules)
        done = _run([f"{binary}-restore", "-w", "--noflush"], f"*filter\n:{chain} - [0:0]\n{body}COMMIT\n")
        if done.returncode != 0:
            raise FenceError(f"{tool} could not fence stdio servers off the platform's database and Redis "
                             f"({done.stderr.strip()[:300]}); in a container, grant CAP_NET_ADMIN, or set ASIXTO_STDIO_FENCE=0")
    if _run([binary, "-w", "-C", "OUTPUT", "-j", chain]).returncode != 0:
        inserted = _run([binary, "-w", "-I", "OUTPUT", "1", "-j", chain])
        if inserted.returncode != 0:
            raise FenceError(f"{tool} could not add the stdio fence to OUTPUT ({inserted.stderr.strip()[:300]})")
    _installed.add((tool, chain))


def prepare(shared_uid: int | None) -> list[str]:
    """Installs the TCP fence for the stdio users (once per process and rule set) and returns the
    directories the supervisor must hide; [] when fencing is off. Raises FenceError when it is on
    and cannot be set up: the server must then not start."""
    if not enabled():
        return []
    tcp, dirs = platform_services()
    with _lock:
        for version, chain_rules in rules(shared_uid, tcp).items():
            if chain_rules:
                _install("iptables" if version == 4 else "ip6tables", chain_rules)
    return hidden_dirs(dirs)
