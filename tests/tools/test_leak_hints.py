"""The one-pass pre-scan of the sanitiser (P1) never skips a pattern that could match (G7, T7):
RE2 reads `\\s` and `\\d` as ASCII, Python as Unicode, so the hints spell Python's classes out;
here every Unicode space and digit Python's hints see, RE2's see too, on every hint that has one."""

import re
import sys

import pytest

from tools.rules.leaks import _PATTERNS, _PYTHON_HINTS, _possible, clean_text

SAMPLES = [
    "Traceback (most recent call last):", 'File "x.py", line 3', "at Foo.bar(Foo.java:12)\n", "SQLSTATE[23505]",
    "-----BEGIN RSA PRIVATE KEY-----", "Authorization: Bearer abcdefghijk", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijk",
    "sk_live_abcdefghijkl", "https://user:pass@host/", "X-Api-Key: abcdefgh", "password=hunter22", '{"id": 7}',
    "123e4567-e89b-12d3-a456-426614174000", "Encontré 1 producto(s): Router WiFi 6, $ 189.900, disponible.", "",
]


def python_possible(text):
    return tuple(p for p, hint in zip(_PATTERNS, _PYTHON_HINTS, strict=True) if hint.search(text))


@pytest.mark.parametrize("text", SAMPLES)
def test_it_finds_the_same_patterns_as_pythons_hints(text):
    """G7: one pass finds what the hint per pattern found."""
    assert _possible(text) == python_possible(text)
    assert _possible(text * 50) == python_possible(text * 50)


def test_unicode_spaces_and_digits_count_as_python_counts_them():
    """G7, T7: a bearer token after a no-break space, credentials in a URL split by an ideographic
    space, a stack frame with Arabic-Indic line numbers are still looked at."""
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if re.fullmatch(r"\s", chr(c))]
    digits = [chr(c) for c in range(sys.maxunicode + 1) if re.fullmatch(r"\d", chr(c))]
    assert len(spaces) > 20 and len(digits) > 300
    for space in spaces:
        for text in (f"Bearer{space}x", f'"{space}:', f"://a{space}:b@", f"://ab:c{space}@"):
            assert _possible(text) == python_possible(text), (hex(ord(space)), text)
    for digit in digits:
        text = f"at x(X.java:{digit})"
        assert _possible(text) == python_possible(text), hex(ord(digit))


def test_a_lone_surrogate_is_still_scanned():
    """A4, G7: text RE2 cannot read (a lone surrogate from `\\ud800` in JSON) is scanned with
    Python's hints, and its token still removed."""
    cleaned = clean_text("\ud800 Authorization: Bearer abcdefghijklmnop")
    assert "abcdefghijklmnop" not in cleaned.value and cleaned.leaks
