"""Live certification probes (C8, C9): call a tool with the admin's sample arguments, judge what
came back, and have the tool certified again with the probe's findings."""

import uuid

from django.utils.translation import gettext_lazy as _

from asixto.errors import ApplicationError
from tenants.selectors import current_tenant
from tools import mcp
from tools.certification import certify_tools
from tools.models import Tool
from tools.rules import Finding as RuleFinding
from tools.rules import check_idempotency, check_probe_result
from tools.rules.findings import blocking
from tools.servers import server_target
from tools.texts import CodedText, coded, error_code


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
        code, params = error_code(exc)
        findings.append(blocking(
            "C8", coded(_("The live probe failed: %(error)s"), error=CodedText(code, params)),
            _("Check the sample arguments and that the server answers."),
        ))
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


def tool_set_sample_arguments(*, tool: Tool, sample_arguments: dict | None) -> Tool:
    if sample_arguments is not None and not isinstance(sample_arguments, dict):
        raise ApplicationError(_("Sample arguments must be a JSON object."), fields={"sample_arguments": [_("Not an object.")]})
    tool.sample_arguments = sample_arguments
    tool.save(update_fields=["sample_arguments"])
    return tool
