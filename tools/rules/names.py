"""Tool names: C1 (snake_case, verb + entity, 1–64 characters) and M6 (the
prefixed name the model sees, `<server slug>__<tool name>`, fits in 64)."""

import re

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from .findings import Finding, blocking, warning
from .verbs import is_verb, name_words

MAX_NAME_LENGTH = 64
PREFIX_SEPARATOR = "__"

_SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
# What model APIs accept as a function name. Outside this set the call fails
# at the model provider, so it blocks; inside it, other styles only warn.
_MODEL_SAFE = re.compile(r"^[A-Za-z0-9_-]+$")


def prefixed_name(server_slug: str, name: str) -> str:
    """The name the model sees (M6); the server never sees the prefix."""
    return f"{server_slug}{PREFIX_SEPARATOR}{name}"


def check_name(name, *, server_slug: str) -> list[Finding]:
    if not isinstance(name, str) or not name:
        return [
            blocking(
                "C1",
                _("The tool has no name."),
                _("Give the tool a snake_case name made of a verb and an entity, such as consultar_cliente."),
            )
        ]
    findings: list[Finding] = []
    if len(name) > MAX_NAME_LENGTH:
        findings.append(
            blocking(
                "C1",
                format_lazy(
                    _("The name has {length} characters; the limit is {limit}."),
                    length=len(name),
                    limit=MAX_NAME_LENGTH,
                ),
                _("Shorten the name. Renaming publishes a new tool that must be certified again."),
            )
        )
    else:
        full = prefixed_name(server_slug, name)
        if len(full) > MAX_NAME_LENGTH:
            # The model provider rejects the whole tool list, not only this tool.
            findings.append(
                blocking(
                    "M6",
                    format_lazy(
                        _("The model sees this tool as “{full}”, {length} characters; the limit is {limit}."),
                        full=full,
                        length=len(full),
                        limit=MAX_NAME_LENGTH,
                    ),
                    format_lazy(
                        _("Shorten the tool name to {room} characters or fewer, or use a shorter server slug."),
                        room=max(MAX_NAME_LENGTH - len(server_slug) - len(PREFIX_SEPARATOR), 0),
                    ),
                )
            )
    if not _MODEL_SAFE.match(name):
        findings.append(
            blocking(
                "C1",
                _("The name has characters that model APIs reject (only letters, digits, “_” and “-” are accepted)."),
                _("Use lower-case letters, digits and underscores: consultar_cliente."),
            )
        )
    elif not _SNAKE_CASE.match(name):
        findings.append(
            warning(
                "C1",
                _("The name is not snake_case."),
                _("Use lower-case words joined by single underscores: consultar_cliente, crear_cita."),
            )
        )
    findings.extend(_check_verb_and_entity(name))
    return findings


def _check_verb_and_entity(name: str) -> list[Finding]:
    # A style rule: the model still calls the tool, so these only warn.
    words = name_words(name)
    if not words or not is_verb(words[0]):
        return [
            warning(
                "C1",
                _("The name does not start with a verb."),
                _("Name the action first, then the entity: consultar_cliente, crear_cita, mover_etapa."),
            )
        ]
    if len(words) < 2:
        return [
            warning(
                "C1",
                _("The name is a verb without an entity."),
                _("Say what the action applies to: consultar_cliente rather than consultar."),
            )
        ]
    return []
