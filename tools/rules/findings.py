"""The Finding: one broken (or doubtful) contract rule on one tool.

Findings are plain values so the rules stay pure; the certification service
turns them into rows. Messages and hints are lazy translations: they are
rendered in the language active when they are shown, not when they are made.
"""

from dataclasses import dataclass
from typing import Any, Iterable

BLOCKING = "blocking"
WARNING = "warning"
SEVERITIES = (BLOCKING, WARNING)


@dataclass(frozen=True)
class Finding:
    """A rule id from SPEC (e.g. "C3"), a severity, and text for the tenant admin."""

    rule: str
    severity: str
    message: Any  # str or a lazy translation
    hint: Any = ""

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")

    @property
    def blocking(self) -> bool:
        return self.severity == BLOCKING

    def to_dict(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "message": str(self.message),
            "hint": str(self.hint),
        }


def blocking(rule: str, message, hint="") -> Finding:
    return Finding(rule, BLOCKING, message, hint)


def warning(rule: str, message, hint="") -> Finding:
    return Finding(rule, WARNING, message, hint)


def is_blocking(findings: Iterable[Finding]) -> bool:
    """True when any finding keeps the tool away from agents (SPEC C)."""
    return any(f.severity == BLOCKING for f in findings)
