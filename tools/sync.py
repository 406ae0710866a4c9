"""Catalog sync (M5, C7): read a server's `tools/list` twice, store it as a new catalog version
with its diff, and have the new or changed tools certified. The one place where a server's
catalog changes."""

import logging

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from asixto.errors import ApplicationError
from tools import mcp
from tools.catalog import definition_hash, diff_listing, prefixed_name, split_listing
from tools.certification import certify_tools, finding_codes, finding_row, update_tool_fields
from tools.models import CatalogVersion, Finding, McpServer, Tool
from tools.rules import tool_level
from tools.rules.findings import warning
from tools.servers import server_probe, server_target
from tools.texts import coded, error_code, text_code

log = logging.getLogger(__name__)


def server_queue_sync(*, server: McpServer):
    """Mark the server queued and send its sync to a worker once the row is committed (M5)."""
    from tools.tasks import server_sync  # the tasks module imports this one

    sync_mark(server=server, status=McpServer.SyncStatus.QUEUED)
    transaction.on_commit(lambda: server_sync.delay(str(server.pk)))


def sync_mark(*, server: McpServer, status: str, error=None):
    """Set the sync status; `error` (an exception or a message) is kept as a code and its
    parameters, so each reader sees it in their own language (A3)."""
    if error is None:
        code, params = "", {}
    else:
        code, params = error_code(error) if isinstance(error, Exception) else text_code(error)
    McpServer.objects.filter(pk=server.pk).update(sync_status=status, sync_error_code=code, sync_error_params=params)
    server.sync_status, server.sync_error_code, server.sync_error_params = status, code, params


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
        sync_mark(server=server, status=McpServer.SyncStatus.ERROR, error=exc)
        raise
    try:
        with transaction.atomic():
            # One sync at a time per server: the lock orders concurrent syncs, so version numbers
            # and diffs are computed against what the previous sync stored.
            McpServer.objects.select_for_update().filter(pk=server.pk).first()
            version = _store_listing(server, first, second)
            server.sync_status, server.synced_at = McpServer.SyncStatus.OK, timezone.now()
            server.sync_error_code, server.sync_error_params = "", {}
            server.save(update_fields=["sync_status", "sync_error_code", "sync_error_params", "synced_at", "updated_at"])
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
            coded(_("The server speaks an older protocol revision (%(version)s), not 2026-07-28."), version=server.protocol_version or "?"),
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
            "M5", coded(_("Some tool definitions were left out: %(problems)s."), problems=problems[:20]),
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
        server_finding_codes=[finding_codes(f) | {"rule": f.rule, "severity": f.severity} for f in server_findings],
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
    update_tool_fields(
        to_update + [live[name] for name in removed_names],
        ["position", "definition", "definition_hash", "prefixed_name", "level", "changed_in", "removed_in"],
    )
    Finding.objects.filter(server=server, tool__isnull=True).delete()
    Finding.objects.bulk_create(
        [finding_row(server, None, f, Finding.Source.SERVER) for f in server_findings]
    )
    certify_tools(server=server, tools=to_create + to_update)
    return version
