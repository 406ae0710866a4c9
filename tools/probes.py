"""Live certification probes (C8, C9): call a tool with the admin's sample arguments, judge what
came back, record each call (source "probe", so the admin sees them with the other calls), and
certify the tool again with the probe's findings.

The calls happen outside any transaction; the verdict is written in one transaction under the
server's row lock, the one a catalog sync takes, so a probe and a sync never interleave their
writes. The probe's findings are kept with the definition they judged and stand, through later
syncs, while that definition is the tool's (see tools.certification)."""

import time
import uuid

from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext_lazy as _

from asixto.errors import ApplicationError
from tenants.selectors import current_tenant
from tools import mcp
from tools.certification import certify_tools, tenant_scenarios
from tools.mcp.meta import call_meta
from tools.models import McpServer, Tool, ToolCall
from tools.rules import Finding as RuleFinding
from tools.rules import check_idempotency, check_probe_result
from tools.rules.findings import blocking
from tools.rules.leaks import configured_secrets
from tools.rules.results import result_size
from tools.servers import server_target
from tools.texts import CodedText, coded, error_code

PROBE_CHANNEL = "certification"


def tool_probe(*, tool: Tool) -> list[RuleFinding]:
    """Live probes (C8, C9) with the admin's sample arguments, then a fresh verdict."""
    if tool.sample_arguments is None:
        raise ApplicationError(_("Store sample arguments for this tool first."), fields={"sample_arguments": [_("Required.")]})
    tenant = current_tenant()
    server = tool.server
    target = server_target(server)
    judged_hash = tool.definition_hash
    # One idempotency key for both calls of the C9 probe; each call its own request id.
    key = f"certification-{uuid.uuid4().hex}"
    calls = []
    first = _call(target, tool, key, "1", calls)
    if isinstance(first, mcp.McpError):
        findings = [_failed(first)]
    else:
        compatible = server.contract_mode == McpServer.ContractMode.COMPATIBLE
        findings = check_probe_result(
            first, output_schema=tool.definition.get("outputSchema"), budget=tenant.result_budget,
            secrets=configured_secrets(tool.server.secret_values), compatible=compatible,
        )
        calls[-1]["findings"] = findings
        annotations = tool.definition.get("annotations") or {}
        # MCP gives idempotentHint a meaning only when readOnlyHint is false (C9, issue 8).
        if annotations.get("idempotentHint") is True and annotations.get("readOnlyHint") is not True:
            second = _call(target, tool, key, "2", calls)
            idempotency = [_failed(second)] if isinstance(second, mcp.McpError) else check_idempotency(first, second)
            calls[-1]["findings"] = idempotency
            findings += idempotency

    with transaction.atomic():
        McpServer.objects.select_for_update().filter(pk=server.pk).first()
        current = Tool.objects.select_related("server").filter(pk=tool.pk, removed_in__isnull=True).first()
        _record(calls, tool)
        still_judged = current is not None and current.definition_hash == judged_hash
        if still_judged:
            certify_tools(server=server, tools=[current], scenarios=tenant_scenarios(tenant), probe_findings={current.pk: findings})
    if not still_judged:
        # The calls are recorded; their verdict says nothing about the definition the tool has now.
        raise ApplicationError(_("The tool changed while it was probed, so its verdict was left as it was. Probe it again."))
    return findings


def _failed(exc: mcp.McpError) -> RuleFinding:
    return blocking(
        "C8", coded(_("The live probe failed: %(error)s"), error=CodedText(*error_code(exc))),
        _("Check the sample arguments and that the server answers."),
    )


def _call(target, tool: Tool, key: str, number: str, calls: list):
    """One probe call; its result, or the McpError it ended in. What happened goes to `calls`."""
    meta = probe_meta(key, number)
    started_at, started = timezone.now(), time.perf_counter()
    call = {"meta": meta, "started_at": started_at, "findings": []}
    try:
        result = mcp.call_tool(target, tool.name, tool.sample_arguments, meta=meta)
    except mcp.McpError as exc:
        call.update(duration_ms=(time.perf_counter() - started) * 1000, error=exc, result=None)
        calls.append(call)
        return exc
    call.update(duration_ms=(time.perf_counter() - started) * 1000, error=None, result=result)
    calls.append(call)
    return result


def _record(calls: list, tool: Tool):
    """Each probe call as a call record (G9), written in the caller's transaction."""
    from tools.gateway import records  # the gateway package imports the services
    from tools.gateway.call import KIND_OUTCOME
    from tools.gateway.results import classify, compiled

    for call in calls:
        error, result = call["error"], call["result"]
        violations, message, outcome, http_status, result_chars = [], "", ToolCall.Outcome.OK, None, 0
        if error is not None:
            outcome = KIND_OUTCOME.get(error.kind, ToolCall.Outcome.PROTOCOL_ERROR)
            message, http_status = error.message, error.http_status
        else:
            validator = compiled(tool.definition.get("outputSchema"), (tool.pk, tool.definition_hash, "output"))
            verdict = classify(result, output_validator=validator,
                               compatible=tool.server.contract_mode == McpServer.ContractMode.COMPATIBLE)
            outcome, violations = verdict.outcome, list(verdict.violations)
            result_chars = result_size(result) if isinstance(result, dict) else 0
        with translation.override("en"):
            violations += [
                {"kind": f"probe:{finding.rule}", "detail": str(finding.message)[:500]}
                for finding in call["findings"] if finding.blocking
            ]
        meta = call["meta"]
        records.submit({
            "id": uuid.uuid4(), "tool_id": tool.pk, "tool_name": tool.prefixed_name, "source": ToolCall.Source.PROBE,
            "turn_id": None, "conversation_id": meta["com.asixto/conversationId"], "channel": PROBE_CHANNEL,
            "idempotency_key": meta["com.asixto/idempotencyKey"], "request_ids": [meta["com.asixto/requestId"]],
            "attempts": 1, "started_at": call["started_at"], "duration_ms": round(call["duration_ms"], 3),
            "outcome": str(outcome), "http_status": http_status, "error": message[:2000],
            "arguments": tool.sample_arguments, "result_chars": result_chars, "model_chars": 0, "truncated": False,
            "violations": violations,
        })


def probe_meta(key, call_number):
    """The `_meta` of a certification probe (G1 keys), marked so the server can tell it apart."""
    tenant = current_tenant()
    return call_meta(
        idempotency_key=key, conversation_id="certification", request_id=f"req-{key}-{call_number}",
        channel=PROBE_CHANNEL, company_id=tenant.slug,
    )


def tool_set_sample_arguments(*, tool: Tool, sample_arguments: dict | None) -> Tool:
    if sample_arguments is not None and not isinstance(sample_arguments, dict):
        raise ApplicationError(_("Sample arguments must be a JSON object."), fields={"sample_arguments": [_("Not an object.")]})
    tool.sample_arguments = sample_arguments
    tool.save(update_fields=["sample_arguments"])
    return tool
