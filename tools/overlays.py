"""The admin's contract overlays (issue 8): what a tenant admin adds to or overrides in a tool's
definition inside Asixto, never on the server (`com.asixto/verb`, capabilities, the model-facing
description, the level), accepting the gateway's suggestions, and the server's contract mode.
The one place where an overlay or a mode changes; each change certifies the tools again on their
effective definition (tools.certification), under the server's row lock that syncs and probes
take, so the three never interleave their writes. The overlay survives every sync: it is keyed
by the tool, and a sync composes it with whatever the server sends."""

import uuid
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from asixto.errors import ApplicationError
from tenants.selectors import current_tenant
from tools.certification import certify_tools, overlay_verdict, standing_probe_blocks, tenant_language, tenant_scenarios
from tools.models import McpServer, Tool
from tools.rules import is_blocking
from tools.rules.descriptions import MAX_LENGTH as MAX_DESCRIPTION
from tools.rules.meta import CAPABILITIES_KEY, MAX_VERB_LENGTH, VERB_KEY
from tools.rules.overlay import LEVEL_ANNOTATIONS, OVERLAY_FIELDS, SUGGESTED_KEY

MAX_CAPABILITIES = 20
MAX_CAPABILITY_LENGTH = 60


def overlay_problems(changes: dict, *, scenarios: list[str] | None) -> dict:
    """Field → messages for what cannot be stored (empty when all is well). A value of None or
    "" clears that field of the overlay."""
    problems = {}
    unknown = sorted(set(changes) - set(OVERLAY_FIELDS))
    if unknown:
        problems["non_field_errors"] = [_("Unknown fields: %(names)s.") % {"names": ", ".join(unknown)}]
    verb = changes.get("verb")
    if verb not in (None, "") and (not isinstance(verb, str) or len(verb) > MAX_VERB_LENGTH):
        problems["verb"] = [_("A phrase of at most %(limit)s characters.") % {"limit": MAX_VERB_LENGTH}]
    description = changes.get("description")
    if description not in (None, "") and (not isinstance(description, str) or len(description) > MAX_DESCRIPTION):
        problems["description"] = [_("Text of at most %(limit)s characters.") % {"limit": MAX_DESCRIPTION}]
    level = changes.get("level")
    if level not in (None, "") and level not in LEVEL_ANNOTATIONS:
        problems["level"] = [_("One of: read, write, destructive.")]
    capabilities = changes.get("capabilities")
    if capabilities not in (None, "", []):
        if (
            not isinstance(capabilities, list) or len(capabilities) > MAX_CAPABILITIES
            or not all(isinstance(c, str) and c.strip() and len(c) <= MAX_CAPABILITY_LENGTH for c in capabilities)
        ):
            problems["capabilities"] = [_("A list of up to %(limit)s scenario names.") % {"limit": MAX_CAPABILITIES}]
        elif scenarios is not None and set(capabilities) - set(scenarios):
            problems["capabilities"] = [
                _("Not among the agent's scenarios: %(names)s.") % {"names": ", ".join(sorted(set(capabilities) - set(scenarios)))}
            ]
    return problems


def merged_overlay(overlay: dict, changes: dict, *, who: str, now) -> dict:
    """The overlay after `changes` (validated), with who changed it and when. A level change is
    recorded on its own (who, when), as the contract asks of every override of a level."""
    merged = dict(overlay or {})
    for field in OVERLAY_FIELDS:
        if field not in changes:
            continue
        value = changes[field]
        if isinstance(value, str):
            value = value.strip()
        if isinstance(value, list):
            value = [item.strip() for item in value]
        if value in (None, "", []):
            merged.pop(field, None)
        else:
            merged[field] = value
        if field == "level" and "level" not in merged:
            merged.pop("level_set_by", None), merged.pop("level_set_at", None)
        elif field == "level" and merged["level"] != (overlay or {}).get("level"):
            merged["level_set_by"], merged["level_set_at"] = who, now.isoformat()
    merged["updated_by"], merged["updated_at"] = who, now.isoformat()
    return merged


def tool_set_overlay(*, tool: Tool, changes: dict, who: str) -> Tool:
    """Store the admin's changes to one tool's overlay and certify it again."""
    scenarios = tenant_scenarios(current_tenant())
    problems = overlay_problems(changes, scenarios=scenarios)
    if problems:
        raise ApplicationError(_("The overlay was not saved."), fields=problems)
    return _apply(tool.server, {tool.pk: changes}, who=who)[0]


def tools_set_overlays(*, server: McpServer, changes_by_tool: dict, who: str) -> list[Tool]:
    """Many tools of one server at once (the dashboard's table editor): all or nothing."""
    scenarios = tenant_scenarios(current_tenant())
    problems = {}
    for tool_id, changes in changes_by_tool.items():
        for field, messages in overlay_problems(changes, scenarios=scenarios).items():
            problems[f"{tool_id}:{field}"] = messages
    if problems:
        raise ApplicationError(_("The overlays were not saved."), fields=problems)
    return _apply(server, changes_by_tool, who=who)


@dataclass
class SuggestionPreview:
    """What accepting one tool's suggestions would do: the overlay changes, its verdict before
    and after, and the blocking findings it would have after."""

    tool: Tool
    changes: dict
    blocked_before: bool
    blocked_after: bool
    findings: list = field(default_factory=list)

    @property
    def would_block(self) -> bool:
        return self.blocked_after and not self.blocked_before

    @property
    def changes_verdict(self) -> bool:
        return self.blocked_after != self.blocked_before


def server_suggestions_preview(*, server: McpServer, tool_ids=None) -> list[SuggestionPreview]:
    """Per tool with a suggested verb or capabilities (all live tools of the server, or those in
    `tool_ids`), what accepting them would change, certified on the would-be overlay (nothing
    is stored). Issue 20: a suggested verb that becomes the admin's own is evidence for C5."""
    tools = server.tools.filter(removed_in__isnull=True).order_by("position", "name")
    if tool_ids is not None:
        tools = tools.filter(pk__in=list(tool_ids))
    tenant = current_tenant()
    scenarios, language, now = tenant_scenarios(tenant), tenant_language(tenant), timezone.now()
    tools = list(tools.only("id", "name", "prefixed_name", "definition", "server_definition", "overlay", "certification"))
    probe_blocked = standing_probe_blocks(tools)
    previews = []
    for tool in tools:
        changes = _suggested_changes(tool)
        if not changes:
            continue
        overlay = merged_overlay(tool.overlay, changes, who="", now=now)
        _effective, findings = overlay_verdict(server=server, definition=tool.server_definition or tool.definition,
                                               overlay=overlay, scenarios=scenarios, language=language)
        previews.append(SuggestionPreview(
            tool=tool, changes=changes, blocked_before=tool.certification == Tool.Certification.BLOCKED,
            blocked_after=is_blocking(findings) or tool.pk in probe_blocked,
            findings=[finding for finding in findings if finding.blocking],
        ))
    return previews


def server_accept_suggestions(*, server: McpServer, who: str, tool_ids=None, confirmed=()) -> tuple[list[Tool], list]:
    """Make the gateway's suggested verb and capabilities the admin's own (all live tools of
    the server, or those in `tool_ids`): they stay when the suggestion would change. A tool that
    accepting would block keeps its suggestions unless its id is in `confirmed`. Returns the
    tools changed and the previews of those held back."""
    confirmed = {str(tool_id) for tool_id in confirmed}
    previews = server_suggestions_preview(server=server, tool_ids=tool_ids)
    held = [p for p in previews if p.would_block and str(p.tool.pk) not in confirmed]
    held_ids = {p.tool.pk for p in held}
    changes = {p.tool.pk: p.changes for p in previews if p.tool.pk not in held_ids}
    return (_apply(server, changes, who=who) if changes else []), held


def _suggested_changes(tool: Tool) -> dict:
    meta = tool.definition.get("_meta") if isinstance(tool.definition.get("_meta"), dict) else {}
    suggested = meta.get(SUGGESTED_KEY) or []
    accepted = {}
    if "verb" in suggested:
        accepted["verb"] = meta.get(VERB_KEY)
    if "capabilities" in suggested:
        accepted["capabilities"] = meta.get(CAPABILITIES_KEY)
    return accepted


def server_set_contract_mode(*, server: McpServer, mode: str) -> McpServer:
    """Switch the server's contract mode and certify its live tools again under it."""
    if mode not in McpServer.ContractMode.values:
        raise ApplicationError(_("Unknown contract mode."), fields={"contract_mode": [_("strict or compatible.")]})
    with transaction.atomic():
        McpServer.objects.select_for_update().filter(pk=server.pk).first()
        McpServer.objects.filter(pk=server.pk).update(contract_mode=mode)
        server.contract_mode = mode
        tools = list(Tool.objects.select_related("server").filter(server=server, removed_in__isnull=True))
        if tools:
            certify_tools(server=server, tools=tools, scenarios=tenant_scenarios(current_tenant()))
    return server


def _apply(server: McpServer, changes_by_tool: dict, *, who: str) -> list[Tool]:
    now = timezone.now()
    changes_by_tool = {uuid.UUID(str(key)): value for key, value in changes_by_tool.items()}
    with transaction.atomic():
        McpServer.objects.select_for_update().filter(pk=server.pk).first()
        server = McpServer.objects.get(pk=server.pk)
        tools = list(Tool.objects.select_related("server").filter(
            server=server, removed_in__isnull=True, pk__in=list(changes_by_tool)
        ))
        if len(tools) != len(changes_by_tool):
            raise ApplicationError(_("Some of these tools are no longer in the catalog."))
        for tool in tools:
            tool.overlay = merged_overlay(tool.overlay, changes_by_tool[tool.pk], who=who, now=now)
            tool.save(update_fields=["overlay"])
        certify_tools(server=server, tools=tools, scenarios=tenant_scenarios(current_tenant()))
    return tools
