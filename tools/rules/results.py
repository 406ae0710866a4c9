"""Live probe results: C8 (shape, schema, size, leaks, business errors as in
G6) and C9 (the same call twice with one idempotency key gives one result).

Severity, and why:
- a result the gateway refuses or cannot use blocks: resultType other than
  "complete" (G4), no content, structuredContent missing or failing the
  outputSchema (G5), a business error not in the G6 shape;
- tokens and traces block: they are secrets or a crash leaking into the
  conversation's trace;
- internal identifiers warn: the gateway removes them anyway (G7), and the
  key-and-shape heuristic can catch a reference the customer needs;
- over budget warns: the runtime truncates with a mark, the call still works;
- a different second result blocks when the tool declares idempotentHint:
  the gateway retries dropped calls with the same key (G3), so a second side
  effect is a real duplicate (two cases opened, two payments).
"""

import json

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from . import leaks
from .findings import Finding, blocking, warning
from .validation import UnusableSchema, build_validator, value_error

ERROR_TYPES = ("NOT_FOUND", "INVALID_INPUT", "CONFLICT", "NOT_ALLOWED", "UNAVAILABLE", "RATE_LIMITED")
# Transient errors say nothing about idempotency: the second call did not run.
TRANSIENT_ERROR_TYPES = ("UNAVAILABLE", "RATE_LIMITED")
DEFAULT_BUDGET = 3000
MAX_REPORTED_PATHS = 5


def result_size(result: dict) -> int:
    """Characters the model would read: the larger of the text and the data."""
    text = sum(len(item.get("text", "")) for item in _items(result) if isinstance(item.get("text"), str))
    data = result.get("structuredContent")
    data_size = len(json.dumps(data, ensure_ascii=False, separators=(",", ":"))) if data is not None else 0
    return max(text, data_size)


def error_shape_problem(result: dict) -> str | None:
    """Why an `isError: true` result is not a G6 business error, or None."""
    data = result.get("structuredContent")
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return 'structuredContent has no "error" object'
    if error.get("error_type") not in ERROR_TYPES:
        return f"error_type must be one of {', '.join(ERROR_TYPES)}"
    message = error.get("user_message")
    if not isinstance(message, str) or not message.strip():
        return "user_message must be a non-empty string"
    return None


def check_probe_result(
    result: dict, *, output_schema: dict | None, budget: int = DEFAULT_BUDGET, secrets: tuple[str, ...] = (),
    compatible: bool = False,
) -> list[Finding]:
    """C8 findings for one live answer. `secrets` are the server's configured credentials
    (leaks.configured_secrets): an answer that echoes one is a token leak, and no finding quotes it."""
    if not isinstance(result, dict):
        return [blocking("C8", _("The tool's result is not a JSON object."), _RESULT_HINT)]
    findings: list[Finding] = []
    result_type = result.get("resultType")
    if result_type is not None and result_type != "complete":
        findings.append(
            blocking(
                "C8",
                format_lazy(_("The result has resultType “{value}”; only “complete” is accepted."), value=result_type),
                _("Resolve the tool in a single call; multi-round results such as input_required are not consumed."),
            )
        )
    if not isinstance(result.get("content"), list) or not result["content"]:
        findings.append(blocking("C8", _("The result has no content."), _RESULT_HINT))
    elif any(item.get("type") != "text" for item in _items(result)):
        findings.append(
            warning(
                "C8",
                _("The result has media content (images, audio or resources); it is dropped in v1."),
                _("Return text and structuredContent only. Escalate media use cases before building them."),
            )
        )
    if result.get("isError") is True:
        problem = error_shape_problem(result)
        if problem and compatible:
            # Compatible mode (issue 8): the gateway passes the server's (sanitised) text on.
            findings.append(warning(
                "C8", format_lazy(_("The business error is not in the expected shape: {problem}."), problem=problem),
                _('Return isError: true with structuredContent {"error": {"error_type": …, "user_message": …}}.'),
            ))
        elif problem:
            findings.append(
                blocking(
                    "C8",
                    format_lazy(_("The business error is not in the expected shape: {problem}."), problem=problem),
                    _('Return isError: true with structuredContent {"error": {"error_type": …, "user_message": …}}.'),
                )
            )
    elif not (compatible and output_schema is None):  # compatible, no outputSchema: text results
        findings.extend(_check_structured(result.get("structuredContent"), output_schema, secrets))
    size = result_size(result)
    if size > budget:
        findings.append(
            warning(
                "C8",
                format_lazy(
                    _("The result has {size} characters; the model reads at most {budget} and the rest is cut."),
                    size=size,
                    budget=budget,
                ),
                _("Return fewer fields, resolved values, or paginate."),
            )
        )
    findings.extend(_check_leaks(result, secrets))
    return findings


_RESULT_HINT = _("Return content with a short text for the model and structuredContent with the data.")


def _items(result: dict) -> list[dict]:
    content = result.get("content")
    return [item for item in content if isinstance(item, dict)] if isinstance(content, list) else []


def _check_structured(data, output_schema, secrets) -> list[Finding]:
    if data is None:
        return [
            blocking(
                "C8",
                _("The result has no structuredContent."),
                _("Return the data in structuredContent, conforming to the outputSchema."),
            )
        ]
    if not isinstance(output_schema, dict):
        return []  # C4 already reports a missing outputSchema.
    try:
        error = value_error(build_validator(output_schema), data)
    except UnusableSchema:
        return []  # C4 already reports an invalid or unsafe outputSchema; nothing was fetched or run.
    if error is None:
        return []
    where = leaks.clean_text(error.where, secrets=secrets).value or "structuredContent"
    return [
        blocking(
            "C8",
            format_lazy(
                _("structuredContent does not match the outputSchema at {where}: {error}"),
                where=where,
                # jsonschema quotes the offending value, which may be the server's own secret.
                error=leaks.clean_text(error.message, secrets=secrets).value,
            ),
            _("Make the result conform to the declared outputSchema, or correct the schema."),
        )
    ]


# One finding per kind of leak: (kind, severity maker, message, hint).
_LEAK_FINDINGS = (
    (
        leaks.TOKEN,
        blocking,
        _("The result contains tokens or secrets ({labels})."),
        _("Never return credentials; they end up in the conversation's trace."),
    ),
    (
        leaks.TRACE,
        blocking,
        _("The result contains stack traces or database errors ({labels})."),
        _("Catch errors and return a business error with a user message instead."),
    ),
    (
        leaks.INTERNAL_ID,
        warning,
        _("The result contains internal identifiers ({labels})."),
        _("Return resolved data (names, full dates, final prices) instead of internal ids; the gateway removes them."),
    ),
)


def _check_leaks(result: dict, secrets) -> list[Finding]:
    found: list[leaks.Leak] = []
    for i, item in enumerate(_items(result)):
        if isinstance(item.get("text"), str):
            found += leaks.clean_text(item["text"], where=f"content/{i}", secrets=secrets).leaks
    if "structuredContent" in result:
        found += leaks.clean_data(result["structuredContent"], where="structuredContent", secrets=secrets).leaks
    findings = []
    for kind, make, message, hint in _LEAK_FINDINGS:
        # Labels and places only: a Leak never holds the leaked value.
        labels = dict.fromkeys(f"{leak.label}: {leak.where}" if leak.where else leak.label for leak in found if leak.kind == kind)
        if labels:
            findings.append(make("C8", format_lazy(message, labels="; ".join(labels)), hint))
    return findings


def check_idempotency(first: dict, second: dict) -> list[Finding]:
    """C9: compare two results of the same call made with the same idempotency key."""
    if _is_transient_error(first) or _is_transient_error(second):
        return [
            warning(
                "C9",
                _("The idempotency probe was inconclusive: the tool reported itself unavailable or rate-limited."),
                _("Run the probe again when the tool is available."),
            )
        ]
    differences = _differences(_comparable(first), _comparable(second), "")
    if not differences:
        return []
    # Paths only, never values: results may hold customer data.
    paths = ", ".join(differences[:MAX_REPORTED_PATHS]) + ("…" if len(differences) > MAX_REPORTED_PATHS else "")
    return [
        blocking(
            "C9",
            format_lazy(_("The second call with the same idempotency key returned a different result ({paths})."), paths=paths),
            _("With the same com.asixto/idempotencyKey, return the stored result of the first call instead of acting again."),
        )
    ]


def _is_transient_error(result) -> bool:
    if not isinstance(result, dict) or result.get("isError") is not True:
        return False
    data = result.get("structuredContent")
    error = data.get("error") if isinstance(data, dict) else None
    return isinstance(error, dict) and error.get("error_type") in TRANSIENT_ERROR_TYPES


def _comparable(result) -> dict:
    # The protocol's own `_meta` (request ids, timings) legitimately differs.
    if not isinstance(result, dict):
        return {"result": result}
    keep = {"isError": result.get("isError") is True}
    if "structuredContent" in result:
        keep["structuredContent"] = result["structuredContent"]
    else:
        keep["content"] = result.get("content")
    return keep


def _differences(a, b, path: str) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in list(dict.fromkeys([*a, *b])):
            sub = f"{path}/{key}" if path else str(key)
            out += [sub] if (key in a) != (key in b) else _differences(a[key], b[key], sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += _differences(x, y, f"{path}/{i}")
        return out
    return [] if a == b else [path or "result"]
