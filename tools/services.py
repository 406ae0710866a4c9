"""Writes of the tools app: registering MCP servers, probing them, syncing their catalog,
certifying tools, and the admin's switches. Each is the one place where that state changes."""

import json
import logging
import uuid

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from asixto.errors import ApplicationError
from tenants.models import ApprovedCommand
from tenants.outbound import outbound_policy
from tenants.selectors import current_tenant
from tools import mcp
from tools.catalog import definition_hash, diff_listing, prefixed_name, split_listing
from tools.catalog_cache import catalog_changed
from tools.models import CatalogVersion, Finding, McpServer, Tool
from tools.outbound import OutboundRefused, check_url
from tools.rules import Finding as RuleFinding
from tools.rules import (
    certify_definition,
    check_idempotency,
    check_probe_result,
    is_blocking,
    tool_level,
)
from tools.rules.findings import blocking, warning

log = logging.getLogger(__name__)

STDIO_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


# ---------------------------------------------------------------- connecting

def approved_command(slug) -> ApprovedCommand:
    command = ApprovedCommand.objects.filter(slug=slug, enabled=True).first()
    if command is None:
        raise ApplicationError(
            _("This command is not approved by the platform operator."), fields={"command": [_("Not an approved command.")]}
        )
    return command


def server_target(server: McpServer) -> "mcp.ServerTarget":
    """How to reach `server` right now. The URL is resolved and checked again here, not only at
    registration, because DNS answers can change (M2)."""
    if server.transport == McpServer.Transport.STDIO:
        command = approved_command(server.command)
        argv = (command.executable, *command.base_args, *(server.args if command.allow_extra_args else ()))
        return mcp.ServerTarget(
            transport="stdio", argv=tuple(str(arg) for arg in argv), env=dict(STDIO_ENV),
            timeout=server.timeout_seconds, discover=server.discover_result, legacy=server.is_legacy,
        )
    _check_reachable(server.url)
    return mcp.ServerTarget(
        transport=server.transport, url=server.url, headers=server.headers, timeout=server.timeout_seconds,
        discover=server.discover_result, legacy=server.is_legacy, outbound=outbound_policy(),
    )


def _check_reachable(url):
    try:
        check_url(url)
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
    validate_server_fields(
        transport=data["transport"], url=data.get("url", ""), command=data.get("command", ""), args=data.get("args", [])
    )
    server = McpServer(**data)
    if headers:
        server.auth_headers = json.dumps(headers)
    server.save()
    return server


def server_update(*, server: McpServer, data: dict) -> McpServer:
    """Change a server. A change to how it is reached forgets the cached discovery (M4)."""
    data = dict(data)
    headers = data.pop("auth_headers", None)
    merged = {key: data.get(key, getattr(server, key)) for key in ("transport", "url", "command", "args")}
    validate_server_fields(**merged)
    reach_changed = any(merged[key] != getattr(server, key) for key in merged) or headers is not None
    for key, value in data.items():
        setattr(server, key, value)
    if headers is not None:
        server.auth_headers = json.dumps(headers) if headers else ""
    if reach_changed:
        server.discover_result, server.protocol_version, server.is_legacy = None, "", False
    server.save()
    return server


def server_probe(*, server: McpServer) -> McpServer:
    """`server/discover` (M4), cached on the row; older servers are marked legacy."""
    result = mcp.probe(server_target(server))
    server.protocol_version = result.protocol_version
    server.is_legacy = result.legacy
    server.discover_result = result.discover
    server.server_info = result.server_info
    server.save(update_fields=["protocol_version", "is_legacy", "discover_result", "server_info", "updated_at"])
    return server


# ---------------------------------------------------------------- catalog sync

def server_queue_sync(*, server: McpServer):
    """Mark the server queued and send its sync to a worker once the row is committed (M5)."""
    from tools.tasks import server_sync  # the tasks module imports this one

    sync_mark(server=server, status=McpServer.SyncStatus.QUEUED)
    transaction.on_commit(lambda: server_sync.delay(str(server.pk)))


def sync_mark(*, server: McpServer, status: str, error: str = ""):
    McpServer.objects.filter(pk=server.pk).update(sync_status=status, sync_error=error[:4000])
    server.sync_status, server.sync_error = status, error


def catalog_sync(*, server: McpServer) -> CatalogVersion:
    """Read the server's catalog twice and store it as a new version with a diff (M5, C7).
    Network first, then one transaction: a failure half-way stores nothing but the error."""
    sync_mark(server=server, status=McpServer.SyncStatus.RUNNING)
    try:
        if not server.protocol_version:
            server_probe(server=server)
        target = server_target(server)
        first = mcp.list_tools(target)
        second = mcp.list_tools(target)
    except (mcp.McpError, ApplicationError) as exc:
        sync_mark(server=server, status=McpServer.SyncStatus.ERROR, error=getattr(exc, "message", str(exc)))
        raise
    try:
        with transaction.atomic():
            # One sync at a time per server: the lock orders concurrent syncs, so version numbers
            # and diffs are computed against what the previous sync stored.
            McpServer.objects.select_for_update().filter(pk=server.pk).first()
            version = _store_listing(server, first, second)
            server.sync_status, server.sync_error, server.synced_at = McpServer.SyncStatus.OK, "", timezone.now()
            server.save(update_fields=["sync_status", "sync_error", "synced_at", "updated_at"])
    except Exception:
        log.exception("storing the catalog of %s failed", server.slug)
        sync_mark(server=server, status=McpServer.SyncStatus.ERROR, error=_("The catalog could not be stored; see the logs."))
        raise
    return version


def _server_findings(server, first, second, problems):
    findings = []
    if server.is_legacy:
        findings.append(warning(
            "legacy_protocol",
            _("The server speaks an older protocol revision (%(version)s), not 2026-07-28.") % {"version": server.protocol_version or "?"},
            _("Upgrade the server's MCP SDK: stateless calls are faster and need no session."),
        ))
    order_first = [item.get("name") for item in first if isinstance(item, dict)]
    order_second = [item.get("name") for item in second if isinstance(item, dict)]
    if order_first != order_second:
        findings.append(warning(
            "C7", _("tools/list returned the tools in a different order on two reads."),
            _("Return tools in a stable order: a changing order defeats the model's prompt cache."),
        ))
    if problems:
        findings.append(warning(
            "M5", _("Some tool definitions were left out: %(problems)s.") % {"problems": "; ".join(problems[:20])},
            _("Every tool needs a unique, non-empty name."),
        ))
    return findings


def _store_listing(server, first, second) -> CatalogVersion:
    listing, problems = split_listing(first)
    live = {tool.name: tool for tool in server.tools.filter(removed_in__isnull=True)}
    diff = diff_listing({name: (tool.definition, tool.definition_hash) for name, tool in live.items()}, listing)
    last = server.versions.order_by("-number").values_list("number", flat=True).first() or 0
    server_findings = _server_findings(server, first, second, problems)
    version = CatalogVersion.objects.create(
        server=server, number=last + 1, tool_count=len(listing), diff=diff,
        server_findings=[finding_texts(f) | {"rule": f.rule, "severity": f.severity} for f in server_findings],
    )
    changed = {item["name"] for item in diff["changed"]}
    to_create, to_update = [], []
    for position, definition in enumerate(listing):
        tool = live.get(definition["name"])
        if tool is None:
            tool = Tool(server=server, name=definition["name"], added_in=version, changed_in=version)
            to_create.append(tool)
        else:
            to_update.append(tool)
            if definition["name"] in changed:
                tool.changed_in = version
        tool.position = position
        tool.definition = definition
        tool.definition_hash = definition_hash(definition)
        tool.prefixed_name = prefixed_name(server.slug, definition["name"])
        tool.level = tool_level(definition.get("annotations"))
    removed_names = set(diff["removed"])
    for name in removed_names:
        live[name].removed_in = version
    Tool.objects.bulk_create(to_create)
    _update_tools(
        to_update + [live[name] for name in removed_names],
        ["position", "definition", "definition_hash", "prefixed_name", "level", "changed_in", "removed_in"],
    )
    Finding.objects.filter(server=server, tool__isnull=True).delete()
    Finding.objects.bulk_create(
        [_finding_row(server, None, f, Finding.Source.SERVER) for f in server_findings]
    )
    certify_tools(server=server, tools=to_create + to_update)
    return version


def _update_tools(tools: list[Tool], field_names: list[str], batch_size: int = 1000):
    """Save `field_names` of many tools in one `UPDATE … FROM (VALUES …)` per batch. Django's
    `bulk_update` builds a CASE with one WHEN per row for every field, which took seconds for a
    1,000-tool catalog (P2); this costs what the rows cost."""
    if not tools:
        return
    fields = [Tool._meta.get_field(name) for name in field_names]
    pk = Tool._meta.pk
    quote = connection.ops.quote_name
    columns = [pk.column, *(field.column for field in fields)]
    assignments = ", ".join(f"{quote(f.column)} = v.{quote(f.column)}::{f.db_type(connection)}" for f in fields)
    row = "(" + ", ".join(["%s"] * len(columns)) + ")"
    for start in range(0, len(tools), batch_size):
        batch = tools[start:start + batch_size]
        params = []
        for tool in batch:
            params.append(pk.get_db_prep_save(tool.pk, connection))
            params += [field.get_db_prep_save(getattr(tool, field.attname), connection) for field in fields]
        sql = (
            f"UPDATE {quote(Tool._meta.db_table)} AS t SET {assignments} "
            f"FROM (VALUES {', '.join([row] * len(batch))}) AS v({', '.join(quote(c) for c in columns)}) "
            f"WHERE t.{quote(pk.column)} = v.{quote(pk.column)}::{pk.db_type(connection)}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


# ---------------------------------------------------------------- certification

def finding_texts(finding: RuleFinding) -> dict:
    texts = {}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            texts[code] = {"message": str(finding.message), "hint": str(finding.hint)}
    return {"texts": texts}


def _finding_row(server, tool, finding: RuleFinding, source) -> Finding:
    return Finding(
        server=server, tool=tool, rule=finding.rule, severity=finding.severity, source=source, **finding_texts(finding)
    )


def certify_tools(*, server: McpServer, tools: list[Tool], probe_findings: dict | None = None):
    """Run the contract (C1–C6, M6) on each tool's stored definition and store the verdict.
    A tool is certified for one exact definition: a later change needs a new verdict (M5).
    Live-probe findings (C8, C9) stand while the definition they were made on is unchanged."""
    scenarios = list(current_tenant().scenarios or []) or None
    probe_findings = probe_findings or {}
    ids = [tool.pk for tool in tools]
    probe_blocked_before = set(
        Finding.objects.filter(tool__in=ids, source=Finding.Source.PROBE, severity=Finding.Severity.BLOCKING)
        .values_list("tool_id", flat=True)
    )
    now = timezone.now()
    rows, stale_probes = [], []
    for tool in tools:
        findings = certify_definition(tool.definition, server_slug=server.slug, scenarios=scenarios)
        rows += [_finding_row(server, tool, f, Finding.Source.DEFINITION) for f in findings]
        if tool.pk in probe_findings:
            rows += [_finding_row(server, tool, f, Finding.Source.PROBE) for f in probe_findings[tool.pk]]
            probe_blocked = is_blocking(probe_findings[tool.pk])
            stale_probes.append(tool.pk)
        elif tool.certified_hash == tool.definition_hash:
            probe_blocked = tool.pk in probe_blocked_before
        else:
            probe_blocked = False
            stale_probes.append(tool.pk)
        blocked = is_blocking(findings) or probe_blocked
        tool.certification = Tool.Certification.BLOCKED if blocked else Tool.Certification.CERTIFIED
        tool.certified_hash = tool.definition_hash
        tool.certified_at = now
    Finding.objects.filter(tool__in=ids, source=Finding.Source.DEFINITION).delete()
    Finding.objects.filter(tool__in=stale_probes, source=Finding.Source.PROBE).delete()
    Finding.objects.bulk_create(rows, batch_size=1000)
    _update_tools(tools, ["certification", "certified_hash", "certified_at"])
    # One bump for the whole sync or probe: bulk writes send no post_save signals.
    catalog_changed()


def tool_probe(*, tool: Tool) -> list[RuleFinding]:
    """Live probes (C8, C9) with the admin's sample arguments, then a fresh verdict."""
    if tool.sample_arguments is None:
        raise ApplicationError(_("Store sample arguments for this tool first."), fields={"sample_arguments": [_("Required.")]})
    target = server_target(tool.server)
    findings = []
    # One idempotency key for both calls of the C9 probe; each call its own request id.
    key = f"certification-{uuid.uuid4().hex}"
    try:
        first = mcp.call_tool(target, tool.name, tool.sample_arguments, meta=probe_meta(key, "1"))
        findings += check_probe_result(
            first, output_schema=tool.definition.get("outputSchema"), budget=current_tenant().result_budget
        )
        annotations = tool.definition.get("annotations") or {}
        if annotations.get("idempotentHint") is True:
            second = mcp.call_tool(target, tool.name, tool.sample_arguments, meta=probe_meta(key, "2"))
            findings += check_idempotency(first, second)
    except mcp.McpError as exc:
        findings.append(blocking("C8", _("The live probe failed: %(error)s") % {"error": exc.message},
                                 _("Check the sample arguments and that the server answers.")))
    certify_tools(server=tool.server, tools=[tool], probe_findings={tool.pk: findings})
    return findings


def probe_meta(key, call_number):
    """The `_meta` of a certification probe (G1 keys), marked so the server can tell it apart."""
    tenant = current_tenant()
    return {
        "com.asixto/idempotencyKey": key,
        "com.asixto/conversationId": "certification",
        "com.asixto/requestId": f"req-{key}-{call_number}",
        "com.asixto/channel": "certification",
        "com.asixto/companyId": tenant.slug,
        "com.asixto/priceListId": "",
        "com.asixto/currency": "",
        "com.asixto/timezone": "UTC",
    }


def tool_set_enabled(*, tool: Tool, enabled: bool) -> Tool:
    tool.enabled = enabled
    tool.save(update_fields=["enabled"])
    return tool


def tool_set_sample_arguments(*, tool: Tool, sample_arguments: dict | None) -> Tool:
    if sample_arguments is not None and not isinstance(sample_arguments, dict):
        raise ApplicationError(_("Sample arguments must be a JSON object."), fields={"sample_arguments": [_("Not an object.")]})
    tool.sample_arguments = sample_arguments
    tool.save(update_fields=["sample_arguments"])
    return tool
