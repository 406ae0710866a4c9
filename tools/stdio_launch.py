"""How one tenant's stdio server is launched (M3, issue 8): the program and arguments the
operator approved, the environment it gets, its private persistent directory and the user it
runs as — the stdio fields of a `ServerTarget`.

- Environment: the platform's fixed minimum (`STDIO_ENV`), then the approval's `fixed_env`, then
  the variables the tenant set — only names the approval declares, plain ones from
  `McpServer.env_values`, secret ones from the encrypted `McpServer.env_secrets`. A tenant's
  value never replaces a fixed one.
- `{workdir}` in the approved arguments and fixed values is the server's own directory,
  `ASIXTO_STDIO_ROOT/<tenant schema>/server-<n>` (`n` its StdioAccount number), made on the first launch that needs it,
  mode 0700, and kept across launches (a memory file, a cache). Tenants' own values and extra
  arguments are taken literally.
- User: when the platform runs as root and `ASIXTO_STDIO_UID_BASE` is set (the default), each
  server runs as its own uid and gid, the base plus a number allocated once per (tenant,
  server) (`tenants.models.StdioAccount`), and owns its directory: no server can read another's.
  Otherwise `user` is None and tools/mcp/stdio.py picks the shared stdio user (or, not being
  root, the platform's own); then the 0700 directories keep other users out, but servers of the
  same user could read each other's directory if they learnt its path (documented in the README).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils.translation import gettext_lazy as _

from asixto.errors import ApplicationError
from tenants.models import ApprovedCommand, StdioAccount
from tenants.stdio_commands import WORKDIR, is_unsafe_name

STDIO_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
MAX_UID = 2**32 - 2  # (uid_t)-1 means "no change" to setuid


@dataclass(frozen=True)
class LaunchSpec:
    """The stdio fields of a ServerTarget."""

    argv: tuple[str, ...]
    env: dict[str, str]
    user: tuple[int, int] | None  # (uid, gid) of its own, or None for the shared stdio user
    workdir: str | None  # None when nothing the operator wrote names {workdir}

    def __repr__(self) -> str:  # env holds secrets
        return f"LaunchSpec(argv={self.argv[:1]!r}, user={self.user!r}, workdir={self.workdir!r})"


def launch_spec(*, server, command: ApprovedCommand) -> LaunchSpec:
    """How to start `server` (a stdio McpServer of the connection's current tenant) right now."""
    extra = tuple(server.args) if command.allow_extra_args else ()
    templated = [*command.base_args, *command.fixed_env.values()]
    uses_workdir = any(WORKDIR in str(value) for value in templated)
    account = stdio_account(server) if uses_workdir or _own_users() else None
    user = server_user(account) if _own_users() else None
    workdir = prepare_workdir(workdir_path(account), user) if uses_workdir else None

    def fill(value) -> str:
        return str(value).replace(WORKDIR, workdir) if workdir else str(value)

    env = dict(STDIO_ENV)
    env.update({name: fill(value) for name, value in command.fixed_env.items()})
    declared = command.declared_vars
    given = {name: value for name, value in server.env_values.items() if declared.get(name) is False}
    given.update({name: value for name, value in server.secret_env.items() if declared.get(name) is True})
    env.update({name: value for name, value in given.items() if name not in env and not is_unsafe_name(name)})
    argv = (command.executable, *(fill(arg) for arg in command.base_args), *(str(arg) for arg in extra))
    return LaunchSpec(argv=argv, env=env, user=user, workdir=workdir)


def _own_users() -> bool:
    return os.geteuid() == 0 and settings.ASIXTO_STDIO_UID_BASE is not None


def stdio_account(server) -> StdioAccount:
    """This tenant server's stable number, allocated on its first launch."""
    from tenants.selectors import current_tenant

    account, _created = StdioAccount.objects.get_or_create(tenant=current_tenant(), server_id=server.pk)
    return account


def server_user(account: StdioAccount) -> tuple[int, int]:
    """(uid, gid) of this tenant server's own: the base plus its stable number."""
    uid = settings.ASIXTO_STDIO_UID_BASE + account.pk
    if uid > MAX_UID:
        raise ApplicationError(_("The platform has no user left for this server; tell the platform operator."))
    return uid, uid


def workdir_path(account: StdioAccount) -> Path:
    """`<root>/<schema>/server-<n>`: named by the server's number, not its id, because servers
    name their directory in answers (an allowed directory, a path written) and a UUID there reads
    as an internal id leaked to the model (G7)."""
    return Path(settings.ASIXTO_STDIO_ROOT) / connection.schema_name / f"server-{account.pk}"


def prepare_workdir(path: Path, user: tuple[int, int] | None) -> str:
    """Make the server's directory (0700, owned by `user` when given) and the folders above it:
    0711 when another user must pass through them, 0700 otherwise. Only the platform writes the
    folders above, so a server cannot swap its directory for a link to another's."""
    passage = 0o711 if user is not None else 0o700
    try:
        for folder in (path.parent.parent, path.parent):
            _own_folder(folder, passage)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode):
            raise OSError(f"{path} is not a directory")
        if user is not None and (info.st_uid, info.st_gid) != user:
            os.chown(path, *user, follow_symlinks=False)
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(path, 0o700, follow_symlinks=False)
    except OSError as exc:
        raise ApplicationError(
            _("The server's private directory could not be prepared; tell the platform operator (%(error)s).")
            % {"error": exc.strerror or exc}
        ) from exc
    return str(path)


def _own_folder(folder: Path, mode: int) -> None:
    folder.mkdir(mode=mode, parents=True, exist_ok=True)
    info = os.lstat(folder)
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != mode:
        os.chmod(folder, mode)
