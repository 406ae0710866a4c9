"""Annotations: C5 (hints declared and honest) and the tool's level (M7).

Hints are not authority (the consumer cannot verify them), so the level is
read from them conservatively, and the name and `com.asixto/verb` are used as
evidence against a tool that writes but says it only reads.
"""

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from .findings import Finding, blocking, warning
from .verbs import (
    DESTRUCTIVE_VERBS,
    name_words,
    phrase_words,
    write_verbs,
)

READ = "read"
WRITE = "write"
DESTRUCTIVE = "destructive"
LEVELS = (READ, WRITE, DESTRUCTIVE)

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint")


def tool_level(annotations: dict | None) -> str:
    """The tool's level (M7): "read", "write" or "destructive".

    A hint that is missing (or not a boolean) takes the MCP default, which is
    also the cautious reading: readOnlyHint defaults to false and
    destructiveHint to true, so a tool that says nothing is "destructive". An
    exposure policy that hides destructive tools then hides it too; it fails
    closed. A tool that claims to be both read-only and destructive
    contradicts itself and is treated as destructive for the same reason.
    """
    hints = annotations if isinstance(annotations, dict) else {}
    destructive = hints.get("destructiveHint")
    if hints.get("readOnlyHint") is True:
        return DESTRUCTIVE if destructive is True else READ
    return WRITE if destructive is False else DESTRUCTIVE


def write_evidence(name, verb_phrase) -> list[str]:
    """Write verbs that lead the tool's name or its `com.asixto/verb` phrase."""
    found: list[str] = []
    if isinstance(name, str):
        found += write_verbs(name_words(name))
    if isinstance(verb_phrase, str):
        found += write_verbs(phrase_words(verb_phrase))
    return list(dict.fromkeys(found))


def check_annotations(annotations, *, name=None, verb_phrase=None, overlaid=()) -> list[Finding]:
    """`overlaid`: the fields of the effective definition the admin's overlay set ("verb",
    "level"), so a finding they cause points to the overlay, not to the server (issue 20)."""
    hints = annotations if isinstance(annotations, dict) else {}
    findings: list[Finding] = []
    # An undeclared hint warns rather than blocks: tool_level() reads it the
    # cautious way, so nothing is exposed that should not be.
    # MCP gives destructiveHint and idempotentHint a meaning only when readOnlyHint is false: a
    # clock that only reads is never "not idempotent" (issue 8).
    meaningful = ("readOnlyHint",) if hints.get("readOnlyHint") is True else HINTS
    missing = [h for h in meaningful if not isinstance(hints.get(h), bool)]
    if missing:
        findings.append(
            warning(
                "C5",
                format_lazy(_("Annotations not declared as true or false: {hints}."), hints=", ".join(missing)),
                _(
                    "Declare readOnlyHint, destructiveHint and idempotentHint. "
                    "Until then the tool is treated as destructive and not idempotent."
                ),
            )
        )
    read_only = hints.get("readOnlyHint") is True
    destructive = hints.get("destructiveHint")
    if read_only and destructive is True:
        findings.append(
            blocking(
                "C5",
                _("The tool declares itself both read-only and destructive."),
                _("A tool that only reads sets destructiveHint: false; one that destroys sets readOnlyHint: false."),
            )
        )
    evidence = write_evidence(name, verb_phrase)
    if read_only and evidence:
        # The contract names this case: declaring read-only a tool that writes
        # breaks the contract and blocks certification.
        findings.append(
            blocking(
                "C5",
                format_lazy(
                    _("The tool declares readOnlyHint: true but its name or verb says it writes ({verbs})."),
                    verbs=", ".join(evidence),
                ),
                _read_only_writes_hint(name, verb_phrase, overlaid),
            )
        )
    destroys = [w for w in evidence if w in DESTRUCTIVE_VERBS]
    if destroys and not read_only and destructive is False:
        # Under-classified by one level (write instead of destructive): the
        # exposure policy may let it through where destructive tools are off.
        findings.append(
            warning(
                "C5",
                format_lazy(
                    _(
                        "The tool declares destructiveHint: false but its name or verb suggests "
                        "it destroys or undoes something ({verbs})."
                    ),
                    verbs=", ".join(destroys),
                ),
                _("Set destructiveHint: true unless the action can be reversed without loss."),
            )
        )
    return findings


def _read_only_writes_hint(name, verb_phrase, overlaid):
    """Where to fix a read-only tool that writes: the overlay when the overlay is the cause."""
    name_evidence = write_verbs(name_words(name)) if isinstance(name, str) else []
    if "verb" in overlaid and not name_evidence:
        return format_lazy(
            _("The verb phrase “{verb}” is your overlay's, not the server's: change it in the tool's overlay "
              "(Contract overlays on the server's page), or set the tool's level to write there."),
            verb=verb_phrase,
        )
    if "level" in overlaid:
        return _("The level read is your overlay's, not the server's: set it to write in the tool's overlay "
                 "(Contract overlays on the server's page).")
    return _("Set readOnlyHint: false. If the tool really only reads, rename it with a reading verb (consultar_, buscar_).")
