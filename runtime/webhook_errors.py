"""Why a webhook delivery attempt failed, kept as a code and parameters and shown in the reader's
language (A3): the worker that made the attempt ran in no reader's language.

    refused            the outbound rules refused the URL ({"reason": {"code": msgid, "params"}})
    redirect           the receiver answered 3xx ({"location"}); webhooks follow no redirect
    http_status        the receiver answered 4xx/5xx ({"status"})
    timeout            no answer within the deadline ({"seconds"})
    connection_failed  no connection ({"reason": the exception's class name})
    literal            text stored before codes existed ({"text"}), shown as it was

Pure functions; no database."""

from django.utils.translation import gettext_lazy as _

from tools.texts import LITERAL, render_text

REFUSED = "refused"
REDIRECT = "redirect"
HTTP_STATUS = "http_status"
TIMEOUT = "timeout"
CONNECTION_FAILED = "connection_failed"

MESSAGES = {
    REFUSED: _("Refused by the outbound rules: %(reason)s"),
    REDIRECT: _("The receiver answered with a redirect (%(location)s); webhooks follow none."),
    HTTP_STATUS: _("The receiver answered HTTP %(status)s."),
    TIMEOUT: _("No answer within %(seconds)s s."),
    CONNECTION_FAILED: _("The connection failed: %(reason)s"),
}


def refused_params(refusal) -> dict:
    """The parameters of a `refused` error from an OutboundRefused (its msgid and values)."""
    if refusal.code:
        return {"reason": {"code": refusal.code, "params": {k: str(v) for k, v in refusal.params.items()}}}
    return {"reason": {"code": LITERAL, "params": {"text": str(refusal.message)[:500]}}}


def render_error(code: str, params: dict | None) -> str:
    """The error in the active language; "" for no error; an unknown code as itself."""
    if not code:
        return ""
    params = params or {}
    if code == LITERAL:
        return str(params.get("text", ""))
    template = MESSAGES.get(code)
    if template is None:
        return code
    values = {name: render_text(value["code"], value.get("params")) if isinstance(value, dict) else value
              for name, value in params.items()}
    try:
        return str(template) % values
    except (KeyError, TypeError, ValueError):
        return code
