"""Registering a tenant's MCP servers and reaching them: the reachability checks at registration
(M2, M3), the variables a tenant sets on a stdio server (issue 8), how to reach a server right
now, and the `server/discover` probe (M4)."""

import hashlib
import json
import time

from django.db import connection
from django.utils.translation import gettext_lazy as _

from asixto.errors import ApplicationError
from tenants.models import ApprovedCommand
from tenants.outbound import outbound_policy
from tenants.services import same_origin
from tenants.stdio_commands import tenant_env_problems
from tools import mcp
from tools.models import McpServer
from tools.outbound import OutboundRefused, check_url
from tools.stdio_launch import STDIO_ENV, launch_spec

__all__ = [
    "STDIO_ENV", "approved_command", "env_state", "server_create", "server_probe", "server_target", "server_update",
    "validate_server_fields",
]
# Every stdio gateway call builds its target (issue 8: a warm call is a few milliseconds, and a
# query would be most of it), so a process re-reads an operator's approval, and rebuilds a
# server's launch spec (its uid row, its {workdir}), at most this often: an approval withdrawn
# reaches every worker within this time.
APPROVAL_REVALIDATE_SECONDS = 1.0
_approvals: dict[str, tuple[float, ApprovedCommand]] = {}
_launches: dict[tuple, tuple[float, object]] = {}


def approved_command(slug) -> ApprovedCommand:
    command = ApprovedCommand.objects.filter(slug=slug, enabled=True).first()
    if command is None:
        raise ApplicationError(
            _("This command is not approved by the platform operator."), fields={"command": [_("Not an approved command.")]}
        )
    return command


def _approved_recently(slug) -> ApprovedCommand:
    """`approved_command`, read at most every APPROVAL_REVALIDATE_SECONDS; never cached inside a
    transaction (it may see rows that are never committed)."""
    if connection.in_atomic_block:
        return approved_command(slug)
    known = _approvals.get(slug)
    if known is not None and time.monotonic() - known[0] < APPROVAL_REVALIDATE_SECONDS:
        return known[1]
    _approvals.pop(slug, None)
    command = approved_command(slug)
    _approvals[slug] = (time.monotonic(), command)
    return command


def _launch_recently(server: McpServer):
    """`launch_spec` of the server as stored now, rebuilt at most every APPROVAL_REVALIDATE_SECONDS
    (and never from inside a transaction): the key holds everything of the server the spec reads,
    so an edit of its variables or arguments takes effect on the next call."""
    command = _approved_recently(server.command)
    if connection.in_atomic_block:
        return launch_spec(server=server, command=command)
    settings_hash = hashlib.sha256(
        json.dumps([server.args, server.env_values, server.env_secrets], sort_keys=True, default=str).encode()
    ).hexdigest()
    key = (connection.schema_name, server.pk, settings_hash)  # the approval: re-read above, at most as old
    known = _launches.get(key)
    if known is not None and time.monotonic() - known[0] < APPROVAL_REVALIDATE_SECONDS:
        return known[1]
    if len(_launches) > 1000:
        _launches.clear()
    spec = launch_spec(server=server, command=command)
    _launches[key] = (time.monotonic(), spec)
    return spec


def server_target(server: McpServer) -> "mcp.ServerTarget":
    """How to reach `server` right now. The URL is resolved and checked again here, not only at
    registration, because DNS answers can change (M2)."""
    if server.transport == McpServer.Transport.STDIO:
        spec = _launch_recently(server)
        return mcp.ServerTarget(
            transport="stdio", argv=spec.argv, env=spec.env, user=spec.user,
            timeout=server.timeout_seconds, discover=server.discover_result, legacy=server.is_legacy,
        )
    _check_reachable(server.url)
    return mcp.ServerTarget(
        transport=server.transport, url=server.url, headers=server.headers, timeout=server.timeout_seconds,
        discover=server.discover_result, legacy=server.is_legacy, outbound=outbound_policy(purpose="mcp"),
    )


def _check_reachable(url):
    try:
        check_url(url, purpose="mcp")
    except OutboundRefused as exc:
        raise ApplicationError(exc.message, fields={"url": [exc.message]}) from exc


def validate_server_fields(*, transport, url, command, args):
    """Registration checks that need more than field types: reachability rules (M2, M3)."""
    if transport == McpServer.Transport.STDIO:
        if not command:
            raise ApplicationError(_("Choose an approved command."), fields={"command": [_("Required for stdio.")]})
        approved = approved_command(command)
        if args and not approved.allow_extra_args:
            raise ApplicationError(
                _("This command takes no extra arguments."), fields={"args": [_("Not allowed for this command.")]}
            )
        return
    if not url:
        raise ApplicationError(_("Give the server's URL."), fields={"url": [_("Required for HTTP transports.")]})
    _check_reachable(url)


def server_create(*, data: dict) -> McpServer:
    """Register a server (M1) after the reachability checks. The caller queues the first catalog
    sync once the row is committed; that sync starts with the discovery probe (M4)."""
    data = dict(data)
    headers = data.pop("auth_headers", None)
    env = data.pop("env", None)
    validate_server_fields(
        transport=data["transport"], url=data.get("url", ""), command=data.get("command", ""), args=data.get("args", [])
    )
    server = McpServer(**data)
    if headers:
        server.auth_headers = json.dumps(headers)
    _set_env(server, env)
    server.save()
    return server


def server_update(*, server: McpServer, data: dict) -> McpServer:
    """Change a server. A change to how it is reached forgets the cached discovery (M4); a
    change of contract mode certifies its tools again (tools.overlays). Its auth headers are
    bound to where it is: a URL on another scheme, host or port clears them unless the same
    change sends new ones (issue 19, M5)."""
    data = dict(data)
    headers = data.pop("auth_headers", None)
    env = data.pop("env", None)
    mode = data.pop("contract_mode", None)
    merged = {key: data.get(key, getattr(server, key)) for key in ("transport", "url", "command", "args")}
    validate_server_fields(**merged)
    if headers is None and server.auth_headers and not same_origin(server.url, merged["url"]):
        headers = {}
    reach_changed = any(merged[key] != getattr(server, key) for key in merged) or headers is not None or bool(env)
    for key, value in data.items():
        setattr(server, key, value)
    _set_env(server, env)
    if headers is not None:
        server.auth_headers = json.dumps(headers) if headers else ""
    if reach_changed:
        server.discover_result, server.protocol_version, server.is_legacy = None, "", False
    server.save()
    if mode and mode != server.contract_mode:
        from tools.overlays import server_set_contract_mode  # it certifies again; certification is above this module

        server_set_contract_mode(server=server, mode=mode)
    return server


def _set_env(server: McpServer, env: dict | None):
    """Apply the variables a tenant gives (name → value; None or "" unsets one) to a server
    whose transport and command are already set and checked. Only names its approved command
    declares are taken; stored values the command no longer declares are dropped (issue 8)."""
    if server.transport != McpServer.Transport.STDIO:
        if env:
            raise ApplicationError(
                _("Only stdio servers take environment variables."), fields={"env": [_("Not for this transport.")]}
            )
        server.env_values, server.env_secrets = {}, ""
        return
    command = approved_command(server.command)
    problems = tenant_env_problems(command, env or {})
    if problems:
        raise ApplicationError(_("These environment variables cannot be set."), fields={"env": problems})
    declared = command.declared_vars
    plain = {name: value for name, value in server.env_values.items() if declared.get(name) is False}
    secret = {name: value for name, value in server.secret_env.items() if declared.get(name) is True}
    for name, value in (env or {}).items():
        store = secret if declared[name] else plain
        if value:
            store[name] = value
        else:
            store.pop(name, None)
    server.env_values = plain
    server.env_secrets = json.dumps(secret) if secret else ""


def env_state(server: McpServer) -> list[dict]:
    """The variables a server's command declares, for the API and the dashboard: a plain one
    with its value, a secret one only as set or not (T7)."""
    command = ApprovedCommand.objects.filter(slug=server.command).first() if server.command else None
    if command is None or server.transport != McpServer.Transport.STDIO:
        return []
    plain, secret = server.env_values, server.secret_env
    return [
        {"name": name, "secret": is_secret, "set": name in (secret if is_secret else plain),
         **({} if is_secret else {"value": plain.get(name, "")})}
        for name, is_secret in command.declared_vars.items()
    ]


def server_probe(*, server: McpServer) -> McpServer:
    """`server/discover` (M4), cached on the row; older servers are marked legacy."""
    result = mcp.probe(server_target(server))
    server.protocol_version = result.protocol_version
    server.is_legacy = result.legacy
    server.discover_result = result.discover
    server.server_info = result.server_info
    server.save(update_fields=["protocol_version", "is_legacy", "discover_result", "server_info", "updated_at"])
    return server

