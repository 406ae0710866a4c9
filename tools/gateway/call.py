"""The one call path to a tenant's tool (G1–G9, M7), used by agent turns and the test console.

Look up the available tool → check the tenant's exposure policy for this channel → validate the
arguments against inputSchema → build `_meta` → send (retrying a dropped or refused connection
with the same idempotency key, never a timeout) → classify → sanitise → record. Whatever
happens, the caller gets a `CallOutcome` with the exact text the model will read.

One deadline bounds the whole call, retries included: the server's `timeout_seconds` from the
first attempt on (G3), on every path (the direct POST, the SDK's HTTP transports, stdio). At most
ASIXTO_MAX_RESULT_BYTES are read from the server per call; more is `too_large`. A failure is
recorded as a code and plain params (rendered in each reader's language, A3) and as English text
for logs, with every configured secret of the server blanked out of both (T7).
"""

import contextlib
import dataclasses
import json
import logging
import os
import random
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from django.conf import settings
from django.db import connection
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from asixto import metrics, tracing
from asixto.json_input import JsonInputError, check_json
from tenants.selectors import current_tenant
from tools import mcp
from tools.bounded import BoundedDict
from tools.catalog_cache import cached
from tools.gateway import http, journal, records
from tools.gateway.results import Classified, UnusableSchema, all_errors, classify, compiled, result_text
from tools.gateway.sanitize import for_model, model_text
from tools.mcp.errors import redact, redact_params, render_error, safe_url, secrets_of
from tools.mcp.failures import FINAL_CODES
from tools.mcp.log_redaction import secrets_in_scope
from tools.mcp import stdio_pool
from tools.mcp.meta import call_meta
from tools.models import McpServer, Tool, ToolCall
from tools.outbound import LookupTimedOut, OutboundRefused, check_url
from tools.rules.leaks import clean_text, configured_secrets
from tools.services import server_target

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
MAX_ARGUMENT_DEPTH = 32  # nesting of a call's arguments (deeper would recurse in validation and encoding)
RETRYABLE = {"dropped", "connect"}  # a timeout is never retried (G3)
KIND_OUTCOME = {
    "connect": ToolCall.Outcome.CONNECT_ERROR,
    "dropped": ToolCall.Outcome.DROPPED,
    "timeout": ToolCall.Outcome.TIMEOUT,
    "http": ToolCall.Outcome.HTTP_ERROR,
    "protocol": ToolCall.Outcome.PROTOCOL_ERROR,
    "process": ToolCall.Outcome.DROPPED,
    "too_large": ToolCall.Outcome.TOO_LARGE,
}
# A retry never starts with less than this left: it could only end as a timeout.
MIN_RETRY_SECONDS = 0.05
# How much of a server's (cleaned) result a call record keeps, in characters of JSON.
RECORD_RESULT_CHARS = 20000
_RECORD_JSON = json.JSONEncoder(ensure_ascii=False, default=str)  # built once, not per call


@dataclass
class CallContext:
    """Who is calling, for `_meta` (G1) and the record (G9). The runtime derives
    `idempotency_key` from the turn and the step so a re-run sends the same key (R10)."""

    channel: str
    idempotency_key: str
    conversation_id: str = ""
    turn_id: uuid.UUID | None = None
    company_id: str = ""
    price_list_id: str = ""
    currency: str = ""
    timezone: str = "UTC"
    source: str = ToolCall.Source.TURN


@dataclass
class CallOutcome:
    outcome: str
    model_text: str  # exactly what the model reads
    structured: object = None
    attempts: int = 0
    request_ids: list[str] = field(default_factory=list)
    duration_ms: float = 0.0
    http_status: int | None = None
    retry_after: float | None = None
    error: str = ""  # English, secrets blanked: for logs and operators
    error_code: str = ""  # with error_params, what a reader sees in their own language (A3)
    error_params: dict = field(default_factory=dict)
    violations: list[dict] = field(default_factory=list)
    truncated: bool = False
    error_type: str = ""
    result_chars: int = 0
    record_id: uuid.UUID | None = None
    # What the server sent, cleaned (leaks and secrets out), for the call record: never sent
    # to the model as such. None when no answer came.
    result: object = None
    attempt_ms: list[float] = field(default_factory=list)  # each attempt's time, in order

    @property
    def ok(self):
        return self.outcome == ToolCall.Outcome.OK


def build_meta(context: CallContext, request_id: str, company_id: str) -> dict:
    """The eight `com.asixto/` keys (G1) for this caller; they travel in params._meta."""
    return call_meta(
        idempotency_key=context.idempotency_key, conversation_id=context.conversation_id, request_id=request_id,
        channel=context.channel, company_id=context.company_id or company_id, price_list_id=context.price_list_id,
        currency=context.currency, timezone=context.timezone,
    )


def find_tool(*, name: str | None = None, tool_id=None) -> Tool | None:
    """The live tool with its server, through the per-process cache (see catalog_cache)."""

    def load():
        opened = connection.connection is None
        queryset = Tool.objects.select_related("server").filter(removed_in__isnull=True).order_by("server__created_at", "pk")
        tool = (queryset.filter(pk=tool_id) if tool_id else queryset.filter(prefixed_name=name)).first()
        if opened and not connection.in_atomic_block:
            # The caller held no connection (a turn gives its own back before a call, P4): the
            # lookup gives back the one it took, so none is held while the server works.
            connection.close()
        return tool

    return cached(("tool", name, str(tool_id) if tool_id else None), load)


@tracing.tool_call
def call_tool(*, arguments: dict, context: CallContext, name: str | None = None, tool_id=None) -> CallOutcome:
    """Call one tool by its model-visible name (or id, for the console). Never raises for what a
    server or a model did wrong: every failure is an outcome the model can be told about."""
    started, started_at = time.perf_counter(), timezone.now()
    tenant = current_tenant()
    tool = find_tool(name=name, tool_id=tool_id)
    shown_name = tool.prefixed_name if tool else (name or str(tool_id))
    tracing.annotate(**{"asixto.tool": shown_name, "asixto.server": tool and tool.server.slug, "asixto.tool.level": tool and tool.level})
    # The record's id is known before anything is sent: the journal names it for each attempt (journal.py).
    record_id = uuid.uuid4()
    with _in_language(tenant.language or settings.LANGUAGE_CODE):
        outcome = _call(tool, shown_name, arguments, context, tenant, (record_id, started_at))
    outcome.duration_ms = (time.perf_counter() - started) * 1000
    outcome.record_id = _record(tool, shown_name, arguments, context, outcome, started_at, record_id)
    metrics.tool_call(server=tool.server.slug if tool else None, level=tool.level if tool else None,
                      outcome=str(outcome.outcome), seconds=outcome.duration_ms / 1000, attempts=outcome.attempts)
    return outcome


_SAME_LANGUAGE = contextlib.nullcontext()


def _in_language(language: str):
    """translation.override(language), or nothing to do when it is already the active one (a
    worker runs its tenant's turns in the tenant's language): activating and restoring it again
    cost more than a tool's validation (P1)."""
    return _SAME_LANGUAGE if translation.get_language() == language else translation.override(language)


def _refusal(kind, text, error=""):
    return CallOutcome(outcome=kind, model_text=text, error=error or text)


def _unsendable(arguments: dict) -> JsonInputError | None:
    try:
        check_json(arguments, max_depth=MAX_ARGUMENT_DEPTH)
    except JsonInputError as exc:
        return exc
    return None


def _call(tool, shown_name, arguments, context, tenant, begun) -> CallOutcome:
    if tool is None or not tool.is_available_to_agents:
        return _refusal(ToolCall.Outcome.UNAVAILABLE, _("The tool %(name)s is not available. Do not use it.") % {"name": shown_name})
    if not tenant.allows_level(context.channel, tool.level):
        return _refusal(
            ToolCall.Outcome.REFUSED,
            _("The tool %(name)s is not allowed on this channel. Do not use it; tell the customer this cannot be done here.")
            % {"name": shown_name},
        )
    if not isinstance(arguments, dict):
        arguments_error = _("the arguments must be a JSON object")
    elif (unsendable := _unsendable(arguments)) is not None:
        # A model can write a NUL or a lone surrogate (`"\ud800"` in JSON): no server, record or
        # log can take it as text, so it is a correctable error, never an exception (A4).
        arguments_error = str(unsendable)
    else:
        try:
            validator = compiled(tool.definition.get("inputSchema"), (tool.pk, tool.definition_hash, "input"))
            arguments_error = all_errors(validator, arguments) if validator is not None else None
        except UnusableSchema as exc:
            # The server's own schema cannot be checked safely (a remote or looping $ref, a pattern
            # RE2 cannot run): the arguments go nowhere, and the admin sees why.
            refused = _refusal(ToolCall.Outcome.REFUSED, _("The tool %(name)s is not available. Do not use it.") % {"name": shown_name},
                               error=f"inputSchema: {exc.message}")
            refused.violations = [{"kind": "input_schema", "detail": exc.message[:500]}]
            return refused
    if arguments_error:
        # A correctable error for the model; the server is never called (G2). It quotes the
        # server's schema, so it goes through the one sanitiser like anything else the model reads.
        shown_error = for_model(arguments_error, channel=context.channel, budget=300, language=tenant.language,
                                secrets=_secrets(tool.server).configured).text
        return _refusal(
            ToolCall.Outcome.INVALID_ARGUMENTS,
            _("The arguments for %(name)s are not valid: %(error)s. Correct them and call the tool again.")
            % {"name": shown_name, "error": shown_error},
        )
    secrets = _secrets(tool.server)
    outcome, result = _send(tool, arguments, context, tenant.slug, begun, secrets)
    if result is None:
        return outcome
    return _judge(tool, shown_name, result, outcome, context, tenant, secrets.configured)


@dataclass(frozen=True)
class _ServerSecrets:
    headers: Mapping[str, str]  # the auth headers to send
    blanked: tuple[str, ...]  # out of errors, records and logs: each value and each word of it
    configured: tuple[str, ...]  # out of what the model reads: see configured_secrets


_SERVER_SECRETS: BoundedDict = BoundedDict(5000)


def _secrets(server: McpServer) -> _ServerSecrets:
    """A server's auth headers and the secrets worked out from them and its secret variables,
    once per server and configuration, not on every call (P1): the key is the server's id (each
    tenant's servers apart) and its stored headers and variables themselves, so a changed secret
    is a new entry at once."""
    key = (server.pk, server.auth_headers, server.env_secrets)
    found = _SERVER_SECRETS.get(key)
    if found is None:
        values = server.secret_values
        found = _ServerSecrets(MappingProxyType(server.headers), tuple(secrets_of(values)), configured_secrets(values))
        _SERVER_SECRETS[key] = found
    return found


@dataclass
class _Route:
    """How one call reaches its server, fixed before the first attempt."""

    server: McpServer
    headers: Mapping[str, str]
    secrets: tuple[str, ...]
    deadline: float  # time.monotonic() by which the whole call is over (G3)
    target: object = None  # the SDK's ServerTarget; None for the direct POST


def _send(tool, arguments, context, company_id, begun, secrets: _ServerSecrets):
    """Attempts until an answer, a timeout, the deadline, or MAX_ATTEMPTS dropped/refused
    connections (G3)."""
    server = tool.server
    outcome = CallOutcome(outcome=ToolCall.Outcome.OK, model_text="")
    # Auth headers and secret stdio variables: what the server was given, it may echo (T7).
    route = _Route(server, secrets.headers, secrets.blanked, time.monotonic() + server.timeout_seconds)
    direct = server.transport == McpServer.Transport.STREAMABLE_HTTP and not server.is_legacy and server.discover_result
    # Refusals are recorded in English (the `error` of logs), whatever language the call runs in:
    # an outbound refusal as its msgid and values with their English text (A3), and the launch of
    # an SDK or stdio target with English active; no language switch for the direct path.
    try:
        if server.transport != McpServer.Transport.STDIO:
            # Again at call time, on every path: DNS answers change (M2). The look-up has the
            # call's deadline too.
            check_url(server.url, purpose="mcp", timeout=route.deadline - time.monotonic())
        if not direct:
            with translation.override("en"):
                route.target = server_target(server)
    except LookupTimedOut:
        params = {"url": safe_url(server.url), "method": f"tools/call {tool.name}"}
        return _failed(outcome, ToolCall.Outcome.CONNECT_ERROR, LookupTimedOut.kind, params, route.secrets, tool), None
    except OutboundRefused as exc:
        params = {"url": safe_url(server.url), **exc.stored()}
        return _failed(outcome, ToolCall.Outcome.REFUSED, "outbound_refused", params, route.secrets, tool), None
    except Exception as exc:  # an unapproved command, a bad URL: the server cannot be reached
        params = {"detail": str(getattr(exc, "message", None) or exc)}
        return _failed(outcome, ToolCall.Outcome.CONNECT_ERROR, "unreachable", params, route.secrets, tool), None
    with secrets_in_scope(route.secrets):  # whatever the libraries underneath log, without them (T7)
        return _attempts(tool, route, arguments, context, company_id, outcome, begun)


def _attempts(tool, route, arguments, context, company_id, outcome, begun):
    record_id, started_at = begun
    for attempt in range(1, MAX_ATTEMPTS + 1):
        request_id = f"req_{os.urandom(10).hex()}"  # 20 hex digits (80 random bits)
        outcome.attempts, outcome.request_ids = attempt, [*outcome.request_ids, request_id]
        meta = build_meta(context, request_id, company_id)
        journal.sending(record_id=record_id, schema=connection.schema_name, request_id=request_id, attempt=attempt,
                        values=_journal_values(tool, arguments, context, started_at) if attempt == 1 else {})
        attempt_started = time.perf_counter()
        try:
            return outcome, _attempt(tool, route, arguments, meta)
        except mcp.McpError as exc:
            outcome.http_status, outcome.retry_after = exc.http_status, exc.retry_after
            pause = 0.05 * 2**attempt * (0.5 + random.random())
            retry = exc.kind in RETRYABLE and exc.code not in FINAL_CODES and attempt < MAX_ATTEMPTS
            if not retry or route.deadline - time.monotonic() < pause + MIN_RETRY_SECONDS:
                kind = KIND_OUTCOME.get(exc.kind, ToolCall.Outcome.PROTOCOL_ERROR)
                if exc.code == "outbound_refused":  # refused at connect time, as up front (M2)
                    kind = ToolCall.Outcome.REFUSED
                return _failed(outcome, kind, exc.code, exc.params, route.secrets, tool), None
            time.sleep(pause)
        finally:
            outcome.attempt_ms = [*outcome.attempt_ms, round((time.perf_counter() - attempt_started) * 1000, 3)]
    raise AssertionError("unreachable")


def _journal_values(tool, arguments, context, started_at) -> dict:
    """What the record of a call cut short would say (journal.recover)."""
    return {"tool_id": tool.pk, "tool_name": tool.prefixed_name, "source": context.source, "turn_id": context.turn_id,
            "conversation_id": context.conversation_id, "channel": context.channel,
            "idempotency_key": context.idempotency_key, "arguments": arguments, "started_at": started_at.isoformat()}


def _attempt(tool, route, arguments, meta):
    """One request to the server: its result, or McpError."""
    server, max_bytes = route.server, settings.ASIXTO_MAX_RESULT_BYTES
    if route.target is None:
        answer = http.call(
            url=server.url, headers=route.headers, name=tool.name, arguments=arguments, meta=meta,
            deadline=route.deadline, timeout=server.timeout_seconds, max_bytes=max_bytes,
        )
        return answer.result
    left = max(route.deadline - time.monotonic(), 0.001)
    target = dataclasses.replace(route.target, operation_timeout=left, max_response_bytes=max_bytes)
    if target.transport == "stdio":  # the server's live session in this process (issue 8)
        owner = (connection.schema_name, str(server.pk))
        return stdio_pool.call_tool(owner=owner, target=target, name=tool.name, arguments=arguments, meta=meta)
    return mcp.call_tool(target, tool.name, arguments, meta=meta)


def _failed(outcome, kind, code, params, secrets, tool):
    """The outcome of a call that got no answer: what the model reads, and what is recorded."""
    outcome.outcome, outcome.error_code = kind, code
    # Blanked again here, whatever produced the params: no secret reaches a record or a log (T7).
    outcome.error_params = redact_params(params, secrets)
    with translation.override("en"):
        outcome.error = redact(render_error(code, outcome.error_params), secrets)
    if kind == ToolCall.Outcome.TIMEOUT:
        outcome.model_text = _("The tool %(name)s did not answer in time. Go on without its result and do not invent it.") % {
            "name": tool.prefixed_name
        }
    elif kind == ToolCall.Outcome.TOO_LARGE:
        outcome.model_text = _(
            "The tool %(name)s answered with more data than the platform accepts. Do not invent its result; "
            "tell the customer it cannot be done right now."
        ) % {"name": tool.prefixed_name}
    else:
        outcome.model_text = _(
            "The tool %(name)s could not be reached. Do not invent its result; tell the customer it cannot be done right now."
        ) % {"name": tool.prefixed_name}
    return outcome


def _judge(tool, shown_name, result, outcome, context, tenant, secrets: tuple[str, ...]) -> CallOutcome:
    """`secrets`: the server's configured ones, never to the model, nor into a record (T7)."""
    try:
        validator = compiled(tool.definition.get("outputSchema"), (tool.pk, tool.definition_hash, "output"))
    except UnusableSchema as exc:
        # Nothing can be checked against it (a remote or looping $ref, a pattern RE2 cannot run).
        verdict = Classified("invalid_output", [{"kind": "output_schema", "detail": f"outputSchema: {exc.message}"[:500]}])
    else:
        compatible = tool.server.contract_mode == McpServer.ContractMode.COMPATIBLE
        verdict = classify(result, output_validator=validator, compatible=compatible)
    outcome.outcome = verdict.outcome
    # Violation details quote what the server sent (a value that broke the schema): cleaned too.
    outcome.violations = [{**v, "detail": clean_text(v["detail"], secrets=secrets).value} for v in verdict.violations]
    sanitise = {"channel": context.channel, "budget": tenant.result_budget, "language": tenant.language, "secrets": secrets}
    seen = model_text(result, **sanitise)
    leaks = list(seen.leaks)
    outcome.truncated = seen.truncated
    if verdict.outcome == ToolCall.Outcome.OK:
        outcome.model_text, outcome.structured = seen.text, seen.structured
    elif verdict.outcome == ToolCall.Outcome.BUSINESS_ERROR:
        # Not a transport failure: the model gets the type and the message for the customer (G6),
        # through the same sanitiser as any result (G7, G8).
        # A plain `isError` text of a compatible server has no type (issue 8).
        outcome.error_type = verdict.error_type
        said = f"{verdict.error_type}: {verdict.user_message}" if verdict.error_type else verdict.user_message
        message = for_model(said, **sanitise)
        outcome.model_text, outcome.truncated = message.text, message.truncated
        leaks += message.leaks
        # The record keeps the server's own words too, cleaned like what the model read (issue 8).
        outcome.error = _server_said(said, secrets)
        if not verdict.error_type:
            outcome.error = f"The server's error, not in the contract's error shape: {outcome.error}"
    else:
        # The bad data stays out of the model's context (G5); the record keeps what the server
        # wrote, cleaned and cut, so the admin sees why (issue 8).
        outcome.error = "; ".join(v["detail"] for v in outcome.violations)
        text = result_text(result).strip()
        if text:
            outcome.error += f"; the server said: {_server_said(text, secrets)}"
        outcome.model_text = _(
            "The tool %(name)s answered with data that breaks its contract. Do not use it; tell the customer it cannot be done right now."
        ) % {"name": shown_name}
    # One violation per kind of leak and place, however often it occurred there.
    found = {(f"leak:{leak.kind}", f"{leak.label} {leak.where}".strip()): None for leak in leaks}
    outcome.violations += [{"kind": kind, "detail": detail} for kind, detail in found]
    outcome.result_chars = seen.original_chars
    outcome.result = seen.structured
    return outcome


SERVER_TEXT_CHARS = 1000  # of a server's own text kept in a record


def _server_said(text: str, secrets) -> str:
    """A server's text for the record: through the one sanitiser (secrets, tokens, traces and
    internal ids removed), cut to SERVER_TEXT_CHARS."""
    return for_model(text, channel="chat", budget=SERVER_TEXT_CHARS, language="en", secrets=secrets).text
def bounded_result(result, limit: int = RECORD_RESULT_CHARS):
    """The cleaned result as the record keeps it: whole up to `limit` characters of JSON, else
    the start of its JSON text (a record must not grow with whatever a server sends). Whole, it
    goes with the (compact) JSON text it was measured by, which the record writer stores as it
    is instead of encoding the result a second time (P1)."""
    if result is None:
        return None
    encoded = records.encoded_json(result)
    text = encoded.text if encoded is not None else _RECORD_JSON.encode(result)
    if len(text) <= limit:
        return encoded if encoded is not None else result
    return {"cut_at_chars": limit, "json_start": text[:limit]}


def _record(tool, shown_name, arguments, context, outcome, started_at, record_id):
    # Plain values, not a model instance: building one costs more than the rest of the record.
    records.submit({
        "id": record_id, "tool_id": tool.pk if tool else None, "tool_name": shown_name, "source": context.source,
        "turn_id": context.turn_id, "conversation_id": context.conversation_id, "channel": context.channel,
        "idempotency_key": context.idempotency_key, "request_ids": outcome.request_ids, "attempts": outcome.attempts,
        "started_at": started_at, "duration_ms": round(outcome.duration_ms, 3), "outcome": str(outcome.outcome),
        "http_status": outcome.http_status, "error": outcome.error[:2000], "error_code": outcome.error_code,
        "error_params": outcome.error_params,
        "arguments": arguments if isinstance(arguments, dict) else {"_": str(arguments)[:500]},
        "result_chars": outcome.result_chars, "model_chars": len(outcome.model_text), "truncated": outcome.truncated,
        "violations": outcome.violations, "model_text": outcome.model_text, "result": bounded_result(outcome.result),
        "attempt_ms": outcome.attempt_ms,
    }, at_once=context.source == ToolCall.Source.CONSOLE)  # the console answers with the record's id
    return record_id
