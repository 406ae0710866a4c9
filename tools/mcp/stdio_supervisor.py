"""The small process between the platform and a stdio MCP server (M3): nothing the server
starts outlives it, and the server runs with less than the platform has.

    python -I -S stdio_supervisor.py STATUS_FD UID GID HIDE -- PROGRAM [ARG...]

Run by tools/mcp/stdio.py, with the server's explicit environment and working directory, in a
session of its own. Standard library only (it starts in a few milliseconds with -I -S).

- It is a *child subreaper* (prctl PR_SET_CHILD_SUBREAPER): whatever the server starts, even
  in a new session (`setsid`, daemons that fork twice), is re-parented here when its parent
  dies, not to init. When the server exits, or when the platform sends SIGTERM (to stop it),
  or when the platform dies (PR_SET_PDEATHSIG), it SIGKILLs every process below it, reaps
  them all, and exits with the server's own exit status (or dies of the same signal).
- The server runs as UID/GID (`-` keeps the platform's), with no supplementary groups and
  `no_new_privs`; a server that stays root (UID `-` while root) loses every capability
  (an empty bounding set), so it cannot read non-dumpable platform processes, nor signal or
  trace them any more than their owner allows.
- HIDE (`-` for none) is a `:`-separated list of directories the server must not see: the
  platform's own database and Redis sockets (issue 19). The server then runs in a mount namespace
  of its own where each is covered by an empty read-only tmpfs, so a `connect()` to a socket
  there finds nothing. Only root can do this; if it cannot, the server is not run (`failed`).
- It writes one line on STATUS_FD: `started <server pid>` once the program is running, or
  `failed <errno>` if it could not be executed.
"""

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 1 << 14, 1 << 18
SWEEP_SECONDS = 10.0  # only processes stuck in the kernel survive SIGKILL this long

_libc = ctypes.CDLL(None, use_errno=True)
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def _prctl(option, value):
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _drop_capabilities():
    """Empty the bounding set: after exec, even uid 0 holds no capability."""
    with open("/proc/sys/kernel/cap_last_cap") as last:
        for capability in range(int(last.read()) + 1):
            if _libc.prctl(PR_CAPBSET_READ, capability, 0, 0, 0) == 1:
                _prctl(PR_CAPBSET_DROP, capability)


def _hide(paths):
    """A mount namespace of the server's own, each of `paths` covered by an empty tmpfs."""
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    if _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:  # nothing leaks back to the host
        raise OSError(ctypes.get_errno(), "mount --make-rprivate / failed")
    for path in paths:
        if os.path.isdir(path) and _libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                               b"size=4k,mode=0755") != 0:
            raise OSError(ctypes.get_errno(), f"mount tmpfs on {path} failed")


def _exec_server(argv, uid, gid, hide, report_fd):
    """In the forked child: lower privileges, restore signals, become the server."""
    try:
        if hide:
            _hide(hide)
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these; programs expect them
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        if uid is not None or gid is not None:
            os.setgroups([])
            if gid is not None:
                os.setgid(gid)
        if os.geteuid() == 0:
            _drop_capabilities()
        if uid is not None:
            os.setuid(uid)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        os.execvpe(argv[0], argv, os.environ)
    except OSError as exc:
        os.write(report_fd, str(exc.errno or 1).encode())
    finally:
        os._exit(127)


def _descendants():
    """Pids of every process below this one (all of them, since orphans come back to us)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, pending = [], list(children.get(os.getpid(), ()))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, ()))
    return found


def _sweep(server_pid, statuses):
    """SIGKILL everything below us and reap it all; note the server's status when it comes."""
    deadline = time.monotonic() + SWEEP_SECONDS
    while time.monotonic() < deadline:
        below = _descendants()
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap(server_pid, statuses)
        try:
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return  # nothing left below us
        time.sleep(0.005)


def _reap(server_pid, statuses):
    """Reap every child that has exited (adopted orphans too); note the server's status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == server_pid:
            statuses.setdefault("server", status)


def _exit_like(status):
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum != signal.SIGKILL:
            signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def main(argv):
    status_fd, uid, gid, hide = int(argv[1]), argv[2], argv[3], argv[4]
    hide = [] if hide == "-" else hide.split(":")
    command = argv[argv.index("--") + 1 :]
    uid = None if uid == "-" else int(uid)
    gid = None if gid == "-" else int(gid)
    # Signals are taken synchronously (sigwaitinfo below), never by a handler that could cut
    # in between reaping the server and noting its status.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS | {signal.SIGCHLD})
    _prctl(PR_SET_DUMPABLE, 0)  # no core dump, no /proc reading of this process
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    statuses: dict[str, int] = {}
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    server_pid = os.fork()
    if server_pid == 0:
        os.close(read_end)
        os.close(status_fd)
        _exec_server(command, uid, gid, hide, write_end)
    os.close(write_end)
    failure = os.read(read_end, 32)  # empty: exec closed the pipe, the program runs
    os.close(read_end)
    try:
        os.write(status_fd, b"failed " + failure + b"\n" if failure else f"started {server_pid}\n".encode())
        os.close(status_fd)
    except BrokenPipeError:
        failure = b"platform gone"  # it died before PR_SET_PDEATHSIG could tell us
    # The pipes belong to the server: keep no end of its stdin or stdout open here.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    while not failure:
        _reap(server_pid, statuses)
        if "server" in statuses:
            break
        if signal.sigwaitinfo(STOP_SIGNALS | {signal.SIGCHLD}).si_signo != signal.SIGCHLD:
            break  # stop: the platform is done with the server, or gone
    _sweep(server_pid, statuses)
    _exit_like(statuses.get("server", 1 << 8))


if __name__ == "__main__":
    main(sys.argv)
