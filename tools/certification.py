"""Certification (C1–C9, M5, M6): a tool's verdict for one exact definition, and its findings.

The verdict combines the contract run on the stored definition (C1–C6, M6; a definition too
large to store is one blocking finding) with the findings of the last live probe (C8, C9),
which stand while the definition the probe judged is the tool's. Each tool records what its
verdict was computed from (`certification_basis`: definition, server slug, the tenant's
scenarios, the rules' code), so a sync certifies again only the tools for which that changed.
The contract runs on each tool's *effective* definition (tools.rules.overlay): the server's,
plus the admin's overlay, plus what the gateway adds in the server's contract mode; the verdict
sets it, with its hash and level, on the tool. Also the admin's switch that enables or disables
a tool."""

import hashlib
import json
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from tenants.selectors import current_tenant
from tools import rules
from tools.catalog import OMITTED_KEY, definition_hash
from tools.catalog_cache import catalog_changed
from tools.models import Finding, McpServer, Tool
from tools.rows import insert_rows, update_rows, uuids
from tools.rules import Finding as RuleFinding
from tools.rules import certify_definition, is_blocking, tool_level
from tools.rules.findings import blocking
from tools.rules.overlay import effective_definition
from tools.rules.suggestions import suggest_capabilities, suggest_verb
from tools.texts import text_code

VERDICT_FIELDS = ["certification", "certified_hash", "certified_at", "certification_basis", "definition", "definition_hash", "level"]


def _rules_fingerprint() -> str:
    # A deploy that changes the rules changes this, and the next sync certifies every tool again.
    digest = hashlib.sha256()
    for path in sorted(Path(rules.__file__).parent.glob("*.py")) + [Path(__file__)]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


RULES_FINGERPRINT = _rules_fingerprint()


def certification_basis_for(*, server_slug: str, scenarios: list[str] | None, mode: str = "", language: str = ""):
    """A function of a tool's server definition hash and overlay: what a verdict depends on
    besides probes, in one hash. The effective definition is made from those two, the contract
    mode, the tenant's language (suggested verbs) and scenarios (C6) and the size limit (a
    stand-in); the contract adds the server's slug (M6) and the rules. Being made of the inputs,
    it tells a sync which tools to certify again without building any effective definition (P2)."""
    context = json.dumps(
        [server_slug, scenarios, mode, language, settings.ASIXTO_MAX_TOOL_DEFINITION_BYTES, RULES_FINGERPRINT]
    ).encode()

    def basis(server_hash: str, overlay: dict | None) -> str:
        inputs = json.dumps([server_hash, overlay or {}], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(context + inputs.encode()).hexdigest()

    return basis


def tenant_scenarios(tenant) -> list[str] | None:
    return list(tenant.scenarios or []) or None


def is_compatible(server: McpServer) -> bool:
    return server.contract_mode == McpServer.ContractMode.COMPATIBLE


def tenant_language(tenant) -> str:
    return (getattr(tenant, "language", "") or "es")[:2]


def effective_for(definition: dict, *, overlay: dict | None, server: McpServer, scenarios: list[str] | None,
                  language: str) -> tuple[dict, list[RuleFinding]]:
    """The effective definition of one server definition (tools.rules.overlay) and the
    warnings that say what the gateway added. A stand-in for a definition too large to store
    stays as it is."""
    if not isinstance(definition, dict) or isinstance(definition.get(OMITTED_KEY), dict):
        return definition, []
    def suggestion():
        # Only for a definition that lacks a verb or capabilities: words are slow to weigh (P2).
        words = {"name": str(definition.get("name") or ""), "title": str(definition.get("title") or ""),
                 "description": str(definition.get("description") or "")[:1000]}
        return {"verb": suggest_verb(**words, language=language),
                "capabilities": suggest_capabilities(**words, scenarios=scenarios)}

    return effective_definition(definition, overlay=overlay, compatible=is_compatible(server), suggestion=suggestion)


def definition_findings(definition: dict, *, server_slug: str, scenarios: list[str] | None, compatible: bool = False,
                        overlaid=()) -> list[RuleFinding]:
    """The contract on one stored definition (C1–C6, M6), or the size finding (M5) when only a
    stand-in was stored."""
    omitted = definition.get(OMITTED_KEY)
    if isinstance(omitted, dict):
        return [blocking(
            "M5",
            format_lazy(
                _("The definition has {size} bytes; the limit is {limit}. Only its name was stored."),
                size=omitted.get("bytes"), limit=omitted.get("limit"),
            ),
            _("Shorten the description and the schemas: a definition this large crowds the model's context."),
        )]
    return certify_definition(definition, server_slug=server_slug, scenarios=scenarios, compatible=compatible, overlaid=overlaid)


def overlay_verdict(*, server: McpServer, definition: dict, overlay: dict | None, scenarios: list[str] | None,
                    language: str) -> tuple[dict, list[RuleFinding]]:
    """The effective definition of a server definition under `overlay` and all its definition
    findings (the contract's and the gateway's notes). Pure: a preview of an overlay uses it too."""
    effective, notes = effective_for(definition, overlay=overlay, server=server, scenarios=scenarios, language=language)
    overlaid = tuple(field for field in ("verb", "level") if (overlay or {}).get(field))
    findings = definition_findings(effective, server_slug=server.slug, scenarios=scenarios,
                                   compatible=is_compatible(server), overlaid=overlaid)
    return effective, findings + notes


def finding_codes(finding: RuleFinding) -> dict:
    """A finding's message and hint as codes and parameters, not text in the language of
    whoever triggered the sync (A3)."""
    message_code, message_params = text_code(finding.message)
    hint_code, hint_params = text_code(finding.hint) if finding.hint else ("", {})
    return {"message_code": message_code, "message_params": message_params, "hint_code": hint_code, "hint_params": hint_params}


def finding_row(server, tool, finding: RuleFinding, source, definition_hash: str = "") -> Finding:
    return Finding(
        server=server, tool=tool, rule=finding.rule, severity=finding.severity, source=source,
        definition_hash=definition_hash, **finding_codes(finding),
    )


def judge_tools(*, server: McpServer, tools: list[Tool], scenarios: list[str] | None, probe_blocked: set) -> list[Finding]:
    """Set each tool's verdict fields for its current definition; return its definition
    findings as unsaved rows. `probe_blocked`: ids of tools whose standing probe findings (made
    on the current definition) block. No database access."""
    now = timezone.now()
    language = tenant_language(current_tenant())
    basis_of = certification_basis_for(server_slug=server.slug, scenarios=scenarios, mode=server.contract_mode, language=language)
    rows = []
    for tool in tools:
        source = tool.server_definition or tool.definition
        effective, findings = overlay_verdict(
            server=server, definition=source, overlay=tool.overlay, scenarios=scenarios, language=language,
        )
        tool.definition, tool.definition_hash = _effective_and_hash(effective, source, tool.server_hash)
        tool.level = tool_level(effective.get("annotations") if isinstance(effective, dict) else None)
        rows += [finding_row(server, tool, finding, Finding.Source.DEFINITION) for finding in findings]
        blocked = is_blocking(findings) or tool.pk in probe_blocked
        tool.certification = Tool.Certification.BLOCKED if blocked else Tool.Certification.CERTIFIED
        tool.certified_hash = tool.definition_hash
        tool.certified_at = now
        tool.certification_basis = basis_of(tool.server_hash, tool.overlay)
    return rows


def _effective_and_hash(effective, source, server_hash: str) -> tuple[dict, str]:
    """The effective definition to store and its hash. One made of the very parts of the
    server's definition (no overlay, nothing added: most tools of a strict server) is the
    server's definition itself, with the hash the sync computed of it, so a sync does not
    serialise and hash every definition a second time (P2). A stand-in's server hash is that of
    the definition too large to store, not of the stand-in, so its hash is computed."""
    if (
        server_hash and isinstance(effective, dict) and isinstance(source, dict) and OMITTED_KEY not in source
        and effective.keys() == source.keys() and all(effective[key] is source[key] for key in source)
    ):
        return source, server_hash
    return effective, definition_hash(effective)


def standing_probe_blocks(tools: list[Tool]) -> set:
    """Ids of the tools with a blocking probe finding made on their current definition."""
    current = {tool.pk: tool.definition_hash for tool in tools}
    found = Finding.objects.filter(
        tool__in=uuids(current), source=Finding.Source.PROBE, severity=Finding.Severity.BLOCKING
    ).values_list("tool_id", "definition_hash")
    return {tool_id for tool_id, judged in found if current.get(tool_id) == judged}


def judge(*, server: McpServer, tools: list[Tool], scenarios: list[str] | None, probe_findings: dict | None = None) -> list[Finding]:
    """Set the verdict fields of `tools` (each with its current definition) and return their new
    findings as unsaved rows. Probe findings stored for another definition must be gone already
    (the sync drops them when a definition changes). `probe_findings`: tool id → the findings
    of a probe just made on that tool's current definition; they replace its earlier ones."""
    probe_findings = probe_findings or {}
    blocked = standing_probe_blocks([tool for tool in tools if tool.pk not in probe_findings])
    blocked |= {tool_id for tool_id, findings in probe_findings.items() if is_blocking(findings)}
    rows = judge_tools(server=server, tools=tools, scenarios=scenarios, probe_blocked=blocked)
    now = timezone.now()
    for tool in tools:
        if tool.pk in probe_findings:
            rows += [finding_row(server, tool, f, Finding.Source.PROBE, tool.definition_hash) for f in probe_findings[tool.pk]]
            tool.probed_hash, tool.probed_at = tool.definition_hash, now
    return rows


def replace_findings(*, tools: list[Tool], rows: list[Finding], probed: list = ()):
    """Store `rows` in place of the definition findings of `tools` (and of the probe findings of
    the tools in `probed`)."""
    Finding.objects.filter(tool__in=uuids(tool.pk for tool in tools), source=Finding.Source.DEFINITION).delete()
    if probed:
        Finding.objects.filter(tool__in=uuids(probed), source=Finding.Source.PROBE).delete()
    insert_rows(Finding, rows)


def certify_tools(*, server: McpServer, tools: list[Tool], scenarios: list[str] | None, probe_findings: dict | None = None):
    """Certify stored tools again and store verdicts and findings (see `judge`). The caller
    holds the server's row lock and the transaction (a probe)."""
    rows = judge(server=server, tools=tools, scenarios=scenarios, probe_findings=probe_findings)
    replace_findings(tools=tools, rows=rows, probed=list(probe_findings or {}))
    update_rows(Tool, tools, VERDICT_FIELDS + (["probed_hash", "probed_at"] if probe_findings else []))
    # One bump for the whole sync or probe: bulk writes send no post_save signals.
    catalog_changed()


def tool_set_enabled(*, tool: Tool, enabled: bool) -> Tool:
    tool.enabled = enabled
    tool.save(update_fields=["enabled"])
    return tool
