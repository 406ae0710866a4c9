"""OpenAI-compatible Chat Completions over httpx (R11): vLLM, Ollama, llama.cpp server and hosted
APIs all speak it.

`complete()` sends one request and returns the first choice as plain values, or raises
`ModelError` with a short code the turn records: `model_refused` (the outbound rules refuse the
URL, M2), `model_unreachable`, `model_timeout`, `model_http_error` (any 4xx/5xx),
`model_bad_response` (not JSON, no choices, a malformed message), `model_empty` (no choice,
or a choice with neither text nor tool calls). Never a hang: a connect timeout, then a deadline
for the whole answer (checked between reads, so at most one read gap late), and a size cap.
The API key goes in one header and nowhere else: never in a log line or an error detail.

A transient failure is sent again, up to `ASIXTO_MODEL_RETRIES` times, as the OpenAI SDK does: a
connection refused, dropped or found stale (a pooled keep-alive connection the server or a load
balancer closed), and the statuses 408, 409, 429 and 5xx. Between attempts it waits what
`Retry-After` asks, else a short pause that doubles (with jitter); never past the deadline of the
whole answer, which all attempts share: a wait that would end after it is not made, and the
failure is reported as it came. A request has no side effect but its tokens, so sending it again
is safe; a timeout is not retried (the deadline is spent).

The endpoint belongs to the tenant, so it is checked against the outbound rules before every
request, and `_client` (the pinned outbound client) connects only to the addresses it checked.
"""

import json
import logging
import random
import time
from dataclasses import dataclass, field

import httpx
from django.conf import settings

from asixto import metrics, tracing
from asixto.json_input import storable
from tenants.outbound import OutboundRefused, check_url, refusal_of
from tenants.outbound_http import outbound_client
from tools.mcp.errors import parse_retry_after

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
MAX_DETAIL = 300
RETRY_STATUSES = frozenset({408, 409, 429})  # and every 5xx
FIRST_PAUSE_SECONDS = 0.25
log = logging.getLogger(__name__)
# The process's HTTP client for model endpoints: pooled and thread-safe (sized for a threads worker
# with hundreds of turns in flight), no redirects, no cookies, and every connection goes to an
# address the outbound rules checked (M2: a DNS answer that changes after the check cannot reach a
# private host). Building it opens nothing, so it is built at import, like the gateway's. Traced,
# each request is a span of ours (`tracing.http_request`), not the httpx instrumentation's.
_client = outbound_client(
    purpose="model",
    limits=httpx.Limits(max_connections=512, max_keepalive_connections=64), headers={"User-Agent": "asixto-runtime"},
    http_spans=False,
)


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # e.g. "https://models.example.com/v1"
    model: str
    api_key: str = field(default="", repr=False)

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


@dataclass(frozen=True)
class NativeCall:
    name: str
    arguments: str  # the JSON text the model wrote, parsed by the turn
    id: str = ""


@dataclass(frozen=True)
class Answer:
    content: str
    tool_calls: tuple[NativeCall, ...] = ()
    finish_reason: str = ""
    # What the server says the request cost (`usage.prompt_tokens`, `usage.completion_tokens`);
    # None when it does not say, so "unknown" is never counted as 0 (issue 20).
    tokens_in: int | None = None
    tokens_out: int | None = None


class ModelError(Exception):
    def __init__(self, code: str, detail: str, *, status: int | None = None, transient: bool = False,
                 retry_after: float | None = None):
        super().__init__(f"{code}: {detail}")
        self.code, self.detail, self.status = code, detail, status
        # Worth sending again (see the module), after `retry_after` seconds when the server said so.
        self.transient, self.retry_after = transient, retry_after

    @property
    def sent(self) -> bool:
        """Whether the request left for the model server: not with no endpoint configured, nor
        when the outbound rules refused its address (then there is no request to count)."""
        return self.code not in UNSENT


UNSENT = frozenset({"model_not_configured", "model_refused"})


def _timeout(deadline_seconds: float) -> httpx.Timeout:
    return httpx.Timeout(
        connect=min(settings.ASIXTO_MODEL_CONNECT_TIMEOUT, deadline_seconds), read=deadline_seconds, write=deadline_seconds, pool=deadline_seconds
    )


def _redact(text: str, endpoint: Endpoint) -> str:
    text = " ".join(str(text).split())[:MAX_DETAIL]
    return text.replace(endpoint.api_key, "***") if endpoint.api_key else text


@tracing.model_request
def complete(*, endpoint: Endpoint, messages: list[dict], tools: list[dict] | None = None, deadline: float | None = None,
             max_tokens: int | None = None, retries: int | None = None) -> Answer:
    """One Chat Completions request; the first choice, or ModelError. `max_tokens` bounds the
    answer (the connection test's small request); turns leave it to the server. `retries`: how
    many times a transient failure is sent again (ASIXTO_MODEL_RETRIES unless given)."""
    started = time.monotonic()
    try:
        answer = _complete(endpoint, messages, tools, deadline, max_tokens,
                           settings.ASIXTO_MODEL_RETRIES if retries is None else retries)
    except ModelError as exc:
        metrics.model_request(outcome=exc.code, seconds=time.monotonic() - started)
        raise
    metrics.model_request(outcome="ok", seconds=time.monotonic() - started, tokens_in=answer.tokens_in or 0,
                          tokens_out=answer.tokens_out or 0)
    return answer


def _complete(endpoint: Endpoint, messages: list[dict], tools: list[dict] | None, deadline: float | None,
              max_tokens: int | None, retries: int) -> Answer:
    deadline = settings.ASIXTO_MODEL_TIMEOUT if deadline is None else deadline
    if not endpoint.base_url or not endpoint.model:
        raise ModelError("model_not_configured", "no model endpoint or model name in the agent settings")
    try:
        check_url(endpoint.url, purpose="model")
    except OutboundRefused as exc:
        raise ModelError("model_refused", exc.message) from exc
    payload = {"model": endpoint.model, "messages": messages, "stream": False}
    if max_tokens:
        payload["max_tokens"] = max_tokens
    if tools:
        payload["tools"] = tools  # in the catalog's order, so the server's prompt cache keeps working (R2)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    content, until = json.dumps(payload, ensure_ascii=False).encode(), time.monotonic() + deadline
    for attempt in range(retries + 1):
        try:
            # Headers copied: each attempt is a span of its own, with its own traceparent.
            body = _send(endpoint, content, dict(headers), until, deadline)
            break
        except ModelError as exc:
            pause = _pause(exc, attempt)
            if attempt == retries or pause is None or time.monotonic() + pause >= until:
                raise
            log.info("model request sent again in %.2f s after %s", pause, exc.code)
            time.sleep(pause)
    return parse_answer(body, endpoint)


def _pause(error: ModelError, attempt: int) -> float | None:
    """How long to wait before sending a request that failed with `error` again, or None."""
    if not error.transient:
        return None
    if error.retry_after is not None:
        return error.retry_after
    return FIRST_PAUSE_SECONDS * 2**attempt * random.uniform(0.75, 1.25)


def _send(endpoint: Endpoint, content: bytes, headers: dict, until: float, deadline: float) -> bytes:
    """One attempt, over by `until` (time.monotonic()) of a request allowed `deadline` seconds in all."""
    started = until - deadline
    try:
        left = max(until - time.monotonic(), 0.001)
        with tracing.http_request("POST", endpoint.url, headers) as traced, \
                _client.stream("POST", endpoint.url, content=content, headers=headers, timeout=_timeout(left)) as response:
            traced.answered(response.status_code)
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise ModelError("model_bad_response", f"the answer is larger than {MAX_RESPONSE_BYTES} bytes")
                if time.monotonic() > until:
                    raise ModelError("model_timeout", f"no complete answer within {deadline:g} s")
                chunks.append(chunk)
            body = b"".join(chunks)
            status = response.status_code
            retry_after = parse_retry_after(response.headers.get("retry-after"))
    except httpx.TimeoutException as exc:
        kind = "connect" if isinstance(exc, httpx.ConnectTimeout) else "answer"
        raise ModelError("model_timeout", f"{kind} timeout after {time.monotonic() - started:.1f} s") from exc
    except httpx.HTTPError as exc:  # refused, reset, dropped mid-answer, a bad URL
        refused = refusal_of(exc)
        if refused is not None:  # the name now resolves somewhere the rules refuse (M2)
            raise ModelError("model_refused", refused.message) from exc
        # Refused, reset, or a pooled connection found closed: worth another attempt (not a bad URL).
        transient = isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError))
        raise ModelError("model_unreachable", _redact(f"{type(exc).__name__}: {exc}", endpoint), transient=transient) from exc
    if status >= 400:
        raise ModelError("model_http_error", f"HTTP {status}: {_error_message(body, endpoint)}", status=status,
                         transient=status in RETRY_STATUSES or status >= 500, retry_after=retry_after)
    if not 200 <= status < 300:
        raise ModelError("model_bad_response", f"HTTP {status}", status=status)
    return body


def _error_message(body: bytes, endpoint: Endpoint) -> str:
    try:
        data = json.loads(body)
        error = data.get("error") if isinstance(data, dict) else None
        message = error.get("message") if isinstance(error, dict) else error or data.get("detail", "")
    except (ValueError, AttributeError):
        message = body[:MAX_DETAIL].decode("utf-8", "replace")
    return _redact(message or "", endpoint)


def _text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(part.get("text", "") for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))
    raise ModelError("model_bad_response", "the message content is neither text nor a list of parts")


def _native_calls(raw) -> tuple[NativeCall, ...]:
    if raw in (None, []):
        return ()
    if not isinstance(raw, list):
        raise ModelError("model_bad_response", "tool_calls is not a list")
    calls = []
    for item in raw:
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            raise ModelError("model_bad_response", "a tool call without a function name")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):  # some servers send the object itself
            arguments = json.dumps(arguments, ensure_ascii=False)
        # A NUL or lone surrogate written as such cannot be stored; one escaped inside the arguments
        # (`\\u0000`) stays, and the turn refuses those arguments (runtime/turn.py).
        calls.append(NativeCall(name=storable(name[:250]), arguments=storable(arguments), id=storable(str(item.get("id") or "")[:100])))
    return tuple(calls)


def _count(value) -> int | None:
    """A token count as the server reported it; anything but a plausible whole number is unknown."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


def parse_answer(body: bytes, endpoint: Endpoint) -> Answer:
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise ModelError("model_bad_response", "the answer is not JSON") from exc
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        if isinstance(data, dict) and data.get("error"):
            raise ModelError("model_http_error", _error_message(body, endpoint))
        raise ModelError("model_bad_response", "the answer has no choices")
    if not data["choices"]:
        raise ModelError("model_empty", "the answer has no choice")
    choice = data["choices"][0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ModelError("model_bad_response", "the first choice has no message")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    answer = Answer(
        content=storable(_text(message.get("content"))),
        tool_calls=_native_calls(message.get("tool_calls")),
        finish_reason=storable(str(choice.get("finish_reason") or "")[:40]),
        tokens_in=_count(usage.get("prompt_tokens")), tokens_out=_count(usage.get("completion_tokens")),
    )
    if not answer.content.strip() and not answer.tool_calls:
        raise ModelError("model_empty", "the choice has neither text nor tool calls")
    return answer
