"""Why a turn failed, in the reader's language (A3): a turn keeps a code (`Turn.error_code`) and
a technical detail in English from the worker, which ran in no reader's language; pages show the
sentence below, and the detail only where it adds something (a model server's own message).

Pure lookups; no database."""

from django.utils.translation import gettext_lazy as _

MODEL_NOT_CONFIGURED = "model_not_configured"

MESSAGES = {
    MODEL_NOT_CONFIGURED: _("The agent settings name no model server or model, so the agent could not answer."),
    "model_refused": _("The model's address was refused by the outbound rules."),
    "model_unreachable": _("The model server could not be reached."),
    "model_timeout": _("The model server did not answer in time."),
    "model_http_error": _("The model server answered with an error."),
    "model_bad_response": _("The model server's answer could not be read."),
    "model_empty": _("The model answered with nothing."),
    "no_answer": _("The agent ended the turn without a reply."),
    "internal": _("An internal error stopped the turn; the server's log has the details."),
}
# Codes whose sentence says it all: their English detail is not shown.
SELF_EXPLAINED = {MODEL_NOT_CONFIGURED, "no_answer"}


def turn_error_text(code: str) -> str:
    """The sentence for `code` in the active language; "" for no error or an unknown code."""
    return str(MESSAGES[code]) if code in MESSAGES else ""


def is_model_failure(code: str) -> bool:
    """A failure of the configured model (not its absence): the agent cannot answer."""
    return code.startswith("model_") and code != MODEL_NOT_CONFIGURED
