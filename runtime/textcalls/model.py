"""The shapes a parse returns and the limits it works within (package-internal)."""

from dataclasses import dataclass


MAX_TEXT = 200_000  # characters of one model message that are read; the rest is dropped
MAX_CALLS = 16  # calls taken from one message; the rest are rejected
MAX_REJECTED = 32
MAX_FRAGMENT = 64_000  # a call fragment larger than this is rejected without decoding
MAX_LITERAL = 16_000  # Python literals and pythonic calls parsed with `ast`
MAX_PARAMETERS = 64
MAX_ATTEMPTS = 64  # decode attempts of call-shaped JSON or pythonic lines inside prose
RAW_KEPT = 500  # characters of a rejected fragment kept for the turn record
PREFIX_SEPARATOR = "__"  # `<server slug>__<tool>`, as in tools.rules.names (no Django here)


@dataclass(frozen=True)
class TextCall:
    name: str  # a model-visible tool name from `tools`
    arguments: dict
    raw: str  # the fragment it came from


@dataclass(frozen=True)
class ParsedText:
    calls: tuple[TextCall, ...]
    text: str  # the message with every call, fragment and debris removed, trimmed
    rejected: tuple[str, ...]  # call-like fragments that were not executable, for the turn record
