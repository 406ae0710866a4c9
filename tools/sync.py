"""Catalog sync (M5, C7): read a server's `tools/list` twice, store it as a new catalog version
with its diff, and have the new or changed tools certified. The one place where a server's
catalog changes.

The listing is hostile input: reading stops one tool past ASIXTO_MAX_TOOLS_PER_SERVER and the
sync fails (the last catalog stays), and a definition over ASIXTO_MAX_TOOL_DEFINITION_BYTES is
stored as a stand-in with a blocking finding. A sync writes only what changed: a tool whose
definition (and certification basis) is unchanged keeps its row, verdict and findings; and a
sync whose two reads answer the very bytes the stored catalog was read from, in the context it
was judged in, parses nothing at all (tools.listing_seal, tools.mcp.repeats)."""

import json
import logging
import time
from collections import defaultdict
from typing import NamedTuple

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from asixto import metrics
from asixto.errors import ApplicationError
from tenants.selectors import current_tenant
from tools import mcp
from tools.catalog import ListedTool, diff_listing, prefixed_name, read_listing
from tools.catalog_cache import catalog_changed
from tools.certification import (
    VERDICT_FIELDS,
    certification_basis_for,
    finding_codes,
    finding_row,
    judge,
    replace_findings,
    tenant_language,
    tenant_scenarios,
)
from tools.listing_seal import is_standing, seal_of, standing_pages
from tools.mcp.operations import Listing
from tools.models import CatalogVersion, Finding, McpServer, Tool
from tools.rows import insert_rows, update_rows, uuids
from tools.rules.findings import warning
from tools.rules.overlay import declares_our_meta
from tools.servers import server_probe, server_target
from tools.signals import catalog_version_stored
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
    """Read the server's catalog twice and store it as a new version with a diff (M5, C7); a sync
    that changes nothing records the sync time and returns the current version (no new one).
    Network first, then one transaction: a failure half-way stores nothing but the error. When
    both reads answer the very bytes the stored catalog was read from, in the context it was
    judged in (tools.listing_seal), nothing is parsed, judged or written but the sync time: the
    sync counts as `unchanged` (asixto_syncs_total)."""
    started = time.monotonic()
    try:
        version, result = _sync(server)
    except Exception:
        metrics.sync_finished(result="error", seconds=time.monotonic() - started)
        raise
    metrics.sync_finished(result=result, seconds=time.monotonic() - started)
    return version


def _sync(server: McpServer) -> tuple[CatalogVersion, str]:
    sync_mark(server=server, status=McpServer.SyncStatus.RUNNING)
    try:
        if not server.protocol_version:
            server_probe(server=server)
        target = server_target(server)
        seal = dict(server.listing_seal or {})
        first = _read_listing(target, known=standing_pages(server))
        second = _read_listing(target, previous=first)
    except (mcp.McpError, ApplicationError) as exc:
        sync_mark(server=server, status=McpServer.SyncStatus.ERROR, error=exc)
        raise
    try:
        if first.unread and second.unread:
            # Both reads were the sealed pages, byte for byte: the stored catalog is the server's.
            with transaction.atomic():
                McpServer.objects.select_for_update().filter(pk=server.pk).first()
                if is_standing(server, seal):
                    _mark_synced(server)
                    return server.versions.order_by("-number").first(), "unchanged"
            # Another sync or a change of context came in between: the whole way decides.
        first.read()
        second.read()
        listed, problems = read_listing(first, max_definition_bytes=settings.ASIXTO_MAX_TOOL_DEFINITION_BYTES)
        server_findings = _server_findings(server, _names(first), _names(second), problems)
        with transaction.atomic():
            # One sync at a time per server (and no probe verdict in between): the lock orders
            # them, so version numbers and diffs are computed against what was stored last.
            McpServer.objects.select_for_update().filter(pk=server.pk).first()
            _choose_contract_mode(server, listed)
            version = _store_listing(server, listed, server_findings)
            _mark_synced(server, listing_seal=seal_of(server, first, second))
    except Exception:
        log.exception("storing the catalog of %s failed", server.slug)
        sync_mark(server=server, status=McpServer.SyncStatus.ERROR, error=_("The catalog could not be stored; see the logs."))
        raise
    return version, "ok"


def _mark_synced(server: McpServer, **fields):
    now = timezone.now()
    fields |= {"sync_status": McpServer.SyncStatus.OK, "sync_error_code": "", "sync_error_params": {},
               "synced_at": now, "updated_at": now}
    McpServer.objects.filter(pk=server.pk).update(**fields)
    for name, value in fields.items():
        setattr(server, name, value)


def _choose_contract_mode(server: McpServer, listed: list[ListedTool]):
    """On the first sync of a server whose mode was left empty: strict when it declares our
    `com.asixto/` `_meta` (it means to keep the contract), compatible otherwise (issue 8)."""
    if server.contract_mode:
        return
    strict = any(declares_our_meta(entry.definition) for entry in listed)
    server.contract_mode = McpServer.ContractMode.STRICT if strict else McpServer.ContractMode.COMPATIBLE
    McpServer.objects.filter(pk=server.pk).update(contract_mode=server.contract_mode)


def _read_listing(target, previous=None, known=()) -> Listing:
    limit = settings.ASIXTO_MAX_TOOLS_PER_SERVER
    tools = mcp.list_tools(target, limit=limit, previous=previous, known=known)
    if tools.count > limit:
        raise ApplicationError(
            format_lazy(
                _("The server lists more than {limit} tools, the most one server may have. Nothing was stored; "
                  "the last catalog stays."),
                limit=limit,
            ),
            code="too_many_tools",
        )
    return tools


def _names(listing: list) -> list:
    return [item.get("name") for item in listing if isinstance(item, dict)]


def _server_findings(server, first_names, second_names, problems):
    findings = []
    if server.is_legacy:
        findings.append(warning(
            "legacy_protocol",
            coded(_("The server speaks an older protocol revision (%(version)s), not 2026-07-28."), version=server.protocol_version or "?"),
            _("Upgrade the server's MCP SDK: stateless calls are faster and need no session."),
        ))
    if first_names != second_names:
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


class _Stored(NamedTuple):
    """What the sync compares of a stored live tool (its definition stays in the database)."""

    pk: object
    name: str
    server_hash: str
    definition_hash: str
    position: int
    prefixed_name: str
    certification_basis: str
    overlay: dict


def _store_listing(server: McpServer, listed: list[ListedTool], server_findings) -> CatalogVersion:
    scenarios = tenant_scenarios(current_tenant())
    live = {
        row.name: row
        for row in map(_Stored._make, server.tools.filter(removed_in__isnull=True).values_list(*_Stored._fields))
    }
    changed_ids = [live[e.name].pk for e in listed if e.name in live and live[e.name].server_hash != e.hash]
    # Only the changed definitions are read back, for the fields the diff names.
    old_definitions = dict(Tool.objects.filter(pk__in=uuids(changed_ids)).values_list("name", "server_definition"))
    diff = diff_listing({name: row.server_hash for name, row in live.items()}, listed, old_definitions)
    listed_names = {entry.name for entry in listed}
    last = server.versions.order_by("-number").values_list("number", flat=True).first() or 0
    version = CatalogVersion.objects.create(
        server=server, number=last + 1, tool_count=len(listed), diff=diff, contract_mode=server.contract_mode,
        server_finding_codes=[finding_codes(f) | {"rule": f.rule, "severity": f.severity} for f in server_findings],
        # The admin's overlays survive a sync: the version keeps them beside the server's definitions.
        overlays={name: row.overlay for name, row in live.items() if row.overlay and name in listed_names},
    )

    language = tenant_language(current_tenant())
    basis_of = certification_basis_for(server_slug=server.slug, scenarios=scenarios, mode=server.contract_mode, language=language)
    new_tools, recertified, updates = [], [], defaultdict(list)
    for position, entry in enumerate(listed):
        stored = live.get(entry.name)
        if stored is None:
            new_tools.append(Tool(
                server_id=server.pk, name=entry.name, added_in_id=version.pk, changed_in_id=version.pk, position=position,
                definition=entry.definition, definition_hash=entry.hash, server_definition=entry.definition,
                server_hash=entry.hash, prefixed_name=prefixed_name(server.slug, entry.name), level=entry.level,
            ))
            continue
        wanted = {"position": position, "prefixed_name": prefixed_name(server.slug, entry.name), "server_hash": entry.hash}
        changes = [field for field, value in wanted.items() if getattr(stored, field) != value]
        recertify = stored.certification_basis != basis_of(entry.hash, stored.overlay)
        if not changes and not recertify:
            continue  # untouched: its row, verdict and findings stay as they are
        tool = Tool(
            id=stored.pk, server_id=server.pk, name=entry.name, definition=entry.definition, server_definition=entry.definition,
            overlay=stored.overlay, changed_in_id=version.pk, definition_hash=stored.definition_hash, **wanted,
        )
        if "server_hash" in changes:
            changes += ["server_definition", "changed_in"]
        if recertify or "server_hash" in changes:
            recertified.append(tool)
            changes += VERDICT_FIELDS
        updates[tuple(changes)].append(tool)
    for name in diff["removed"]:
        updates[("removed_in",)].append(Tool(id=live[name].pk, removed_in_id=version.pk))

    # A probe verdict stands only for the definition it judged (C8, C9).
    Finding.objects.filter(tool__in=uuids(changed_ids), source=Finding.Source.PROBE).delete()
    findings = judge(server=server, tools=new_tools + recertified, scenarios=scenarios)
    # The definitions as the listing was read, already serialised for their hashes.
    encoded = {id(entry.definition): entry.text for entry in listed if entry.text is not None}
    insert_rows(Tool, new_tools, encoded=encoded)
    replace_findings(tools=recertified, rows=findings)
    for fields, tools in updates.items():
        update_rows(Tool, tools, list(fields), encoded=encoded)
    _store_server_findings(server, server_findings)
    if new_tools or updates:
        # One bump for the whole sync: bulk writes send no post_save signals.
        catalog_changed()
        catalog_version_stored.send(sender=CatalogVersion, server=server, version=version)
    elif (current := _same_as_previous(version, diff)) is not None:
        # Nothing changed: the server records the sync time, and the catalog history keeps only
        # versions that say something (issue 10); the last version stays the current one.
        version.delete()
        return current
    return version


def _same_as_previous(version: CatalogVersion, diff: dict) -> CatalogVersion | None:
    """The version before `version` when `version` would record nothing new: no tool added,
    removed or changed, and the same server-wide findings, overlays and contract mode."""
    if any(diff.get(part) for part in ("added", "removed", "changed")):
        return None
    previous = CatalogVersion.objects.filter(server_id=version.server_id, number=version.number - 1).first()
    if previous is None:
        return None
    same = (
        previous.server_finding_codes == version.server_finding_codes
        and previous.overlays == version.overlays
        and previous.contract_mode == version.contract_mode
        and previous.tool_count == version.tool_count
    )
    return previous if same else None


def _store_server_findings(server: McpServer, findings):
    """Replace the server-wide findings, unless they are the ones already stored."""
    def key(rule, severity, codes):
        return json.dumps([rule, severity, codes], sort_keys=True)

    wanted = sorted(key(f.rule, f.severity, finding_codes(f)) for f in findings)
    stored = Finding.objects.filter(server=server, tool__isnull=True)
    fields = ["message_code", "message_params", "hint_code", "hint_params"]
    current = sorted(
        key(row["rule"], row["severity"], {name: row[name] for name in fields})
        for row in stored.values("rule", "severity", *fields)
    )
    if wanted == current:
        return
    stored.delete()
    insert_rows(Finding, [finding_row(server, None, f, Finding.Source.SERVER) for f in findings])
