"""The model endpoint's connection test (issue 20, the settings' "Test connection" button and
`POST /api/v1/tenant/model-test`): one small request to the tenant's configured model through the
model client (so with its outbound checks, purpose "model", and its timeouts), answering ok or the
failure's code and message, with the time it took. A bad endpoint shows up here, not as a failed
customer turn. The key goes only in the request's header: the model client redacts it from every
detail, and nothing here logs or returns it."""

import time
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _

from runtime.model_client import Endpoint, ModelError, complete

# A button waits for this: less than a turn may wait.
MAX_TEST_SECONDS = 30
PING = [{"role": "user", "content": "Reply with the single word OK."}]
PING_MAX_TOKENS = 32


@dataclass(frozen=True)
class ModelTestResult:
    ok: bool
    code: str  # "ok", or the model client's error code (runtime/model_client.py)
    message: str  # in the active language
    detail: str  # the model client's technical detail (English), "" when ok
    duration_ms: float
    model: str
    status: int | None = None  # the endpoint's HTTP status on an HTTP error
    tokens_in: int | None = None
    tokens_out: int | None = None


def _messages() -> dict:
    return {
        "model_not_configured": _("No model endpoint or model name is set in the agent settings."),
        "model_refused": _("The outbound rules refuse this model endpoint."),
        "model_unreachable": _("Could not connect to the model endpoint."),
        "model_timeout": _("The model endpoint did not answer in time."),
        "model_http_error": _("The model endpoint answered with an error."),
        "model_bad_response": _("The model endpoint's answer is not a Chat Completions answer."),
        "model_empty": _("The model answered with nothing."),
    }


def model_connection_test(*, tenant) -> ModelTestResult:
    """One request to `tenant`'s model endpoint, as a turn would send it (without tools)."""
    endpoint = Endpoint(tenant.model_base_url, tenant.model_name, tenant.model_api_key)
    started = time.monotonic()
    try:
        answer = complete(endpoint=endpoint, messages=PING, max_tokens=PING_MAX_TOKENS,
                          deadline=min(settings.ASIXTO_MODEL_TIMEOUT, MAX_TEST_SECONDS))
    except ModelError as exc:
        return ModelTestResult(
            ok=False, code=exc.code, message=_messages().get(exc.code, _("The model request failed.")),
            detail=exc.detail, duration_ms=_since(started), model=tenant.model_name, status=exc.status,
        )
    duration_ms = _since(started)
    return ModelTestResult(
        ok=True, code="ok", message=_("The model %(model)s answered in %(ms)d ms.") % {"model": tenant.model_name, "ms": duration_ms},
        detail="", duration_ms=duration_ms, model=tenant.model_name, tokens_in=answer.tokens_in, tokens_out=answer.tokens_out,
    )


def _since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)
