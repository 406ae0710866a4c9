"""Certification (C1–C9, M6): run the contract on each tool's stored definition, keep the live
probes' verdict while the definition is unchanged, store findings and the verdict; and the
admin's switch that enables or disables a certified tool."""

from django.db import connection
from django.utils import timezone

from tenants.selectors import current_tenant
from tools.catalog_cache import catalog_changed
from tools.models import Finding, McpServer, Tool
from tools.rules import Finding as RuleFinding
from tools.rules import certify_definition, is_blocking
from tools.texts import text_code


def finding_codes(finding: RuleFinding) -> dict:
    """A finding's message and hint as codes and parameters, not text in the language of
    whoever triggered the sync (A3)."""
    message_code, message_params = text_code(finding.message)
    hint_code, hint_params = text_code(finding.hint) if finding.hint else ("", {})
    return {"message_code": message_code, "message_params": message_params, "hint_code": hint_code, "hint_params": hint_params}


def finding_row(server, tool, finding: RuleFinding, source) -> Finding:
    return Finding(
        server=server, tool=tool, rule=finding.rule, severity=finding.severity, source=source, **finding_codes(finding)
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
        rows += [finding_row(server, tool, f, Finding.Source.DEFINITION) for f in findings]
        if tool.pk in probe_findings:
            rows += [finding_row(server, tool, f, Finding.Source.PROBE) for f in probe_findings[tool.pk]]
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
    update_tool_fields(tools, ["certification", "certified_hash", "certified_at"])
    # One bump for the whole sync or probe: bulk writes send no post_save signals.
    catalog_changed()


def tool_set_enabled(*, tool: Tool, enabled: bool) -> Tool:
    tool.enabled = enabled
    tool.save(update_fields=["enabled"])
    return tool


def update_tool_fields(tools: list[Tool], field_names: list[str], batch_size: int = 1000):
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
