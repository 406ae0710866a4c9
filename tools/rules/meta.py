"""The definition's `_meta` (C6): `com.asixto/capabilities` places the tool in
the tenant's scenarios and `com.asixto/verb` is how the platform describes it
to the model (R6) and to the customer while it runs (R9).

Severity, and why: a missing or malformed capability list or verb blocks,
because the router has nowhere to place the tool and no wording to compose
its instruction with. Capabilities that are partly unknown, and verb phrasing,
only warn: the tool still works. In compatible mode a missing capability list
warns too: the gateway suggests capabilities only from the tool's own words, and
a tool whose words name none of the tenant's scenarios is routed by its name,
verb and description until the admin places it (issue 20).
"""

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from .findings import Finding, blocking, warning
from .verbs import is_verb, phrase_words

CAPABILITIES_KEY = "com.asixto/capabilities"
VERB_KEY = "com.asixto/verb"
MAX_VERB_WORDS = 10
MAX_VERB_LENGTH = 80


def check_meta(meta, *, scenarios: list[str] | None, compatible: bool = False) -> list[Finding]:
    """`scenarios` is the tenant's scenario list (T6); None skips that check."""
    meta = meta if isinstance(meta, dict) else {}
    return _check_capabilities(meta.get(CAPABILITIES_KEY), scenarios, compatible) + _check_verb(meta.get(VERB_KEY))


def _check_capabilities(capabilities, scenarios, compatible=False) -> list[Finding]:
    if compatible and capabilities in (None, []):
        return [
            warning(
                "C6",
                _("The tool's name and description name none of the agent's scenarios, so it has no capabilities."),
                _("Choose its scenarios in the tool's overlay (Contract overlays on the server's page); until then "
                  "routing places it by its name, verb and description."),
            )
        ]
    if (
        not isinstance(capabilities, list)
        or not capabilities
        or not all(isinstance(c, str) and c.strip() for c in capabilities)
    ):
        return [
            blocking(
                "C6",
                format_lazy(_("_meta has no {key} list."), key=CAPABILITIES_KEY),
                format_lazy(
                    _("Declare the scenarios the tool belongs to in its definition: \"{key}\": [\"pqr\", \"soporte\"]."),
                    key=CAPABILITIES_KEY,
                ),
            )
        ]
    if scenarios is None:
        return []
    known = set(scenarios)
    unknown = [c for c in capabilities if c not in known]
    if not unknown:
        return []
    known_hint = format_lazy(_("The agent's scenarios are: {scenarios}."), scenarios=", ".join(scenarios) or "—")
    if len(unknown) == len(capabilities):
        return [
            blocking(
                "C6",
                format_lazy(
                    _("None of the tool's capabilities is one of the agent's scenarios: {names}."),
                    names=", ".join(unknown),
                ),
                known_hint,
            )
        ]
    return [
        warning(
            "C6",
            format_lazy(_("Some capabilities are not among the agent's scenarios: {names}."), names=", ".join(unknown)),
            known_hint,
        )
    ]


def _check_verb(verb) -> list[Finding]:
    if not isinstance(verb, str) or not verb.strip():
        return [
            blocking(
                "C6",
                format_lazy(_("_meta has no {key} phrase."), key=VERB_KEY),
                format_lazy(
                    _("Declare how to describe the tool, starting with a verb: \"{key}\": \"abrir un caso de soporte\"."),
                    key=VERB_KEY,
                ),
            )
        ]
    words = phrase_words(verb)
    findings = []
    if not words or not is_verb(words[0]):
        findings.append(
            warning(
                "C6",
                format_lazy(_("{key} does not start with a verb."), key=VERB_KEY),
                _("Start the phrase with the action, as in “abrir un caso de soporte”."),
            )
        )
    if len(words) > MAX_VERB_WORDS or len(verb) > MAX_VERB_LENGTH:
        findings.append(
            warning(
                "C6",
                format_lazy(_("{key} is too long for a short phrase."), key=VERB_KEY),
                format_lazy(_("Keep it under {words} words; it is shown while the tool runs."), words=MAX_VERB_WORDS),
            )
        )
    return findings
