"""Removing what must never reach the customer: other turns, thinking, SQL, leftover markers,
and the whitespace removals leave behind (package-internal)."""

import re

from runtime.textcalls.syntax import (
    _CALL_START, _FORBIDDEN, _FORBIDDEN_ENDS, _OTHER_TURN, _SQL_CONTINUATION, _SQL_SHAPES, _SQL_START, _THINKING,
)


# --- Cleaning ------------------------------------------------------------------------------------


def _own_turn(text):
    """`text` up to where the model starts writing someone else's turn (a missing stop token)."""
    match = _OTHER_TURN.search(text)
    return text[: match.start()] if match else text


def _without_thinking(text):
    """`text` without reasoning: closed blocks, a block never closed (it runs until a call begins),
    and everything before a closer that has no opener."""
    final = text.rfind("<|channel|>final<|message|>")
    if final >= 0:
        text = text[final + len("<|channel|>final<|message|>") :]
    for opener, closer, lone_closer in _THINKING:
        first_close = text.find(closer)
        if lone_closer and first_close >= 0 and text.find(opener, 0, first_close) < 0:
            text = text[first_close + len(closer) :]
        spans, pos = [], 0
        while (start := text.find(opener, pos)) >= 0:
            end = text.find(closer, start)
            if end < 0:
                call = _CALL_START.search(text, start)
                spans.append((start, call.start() if call else len(text)))
                break
            spans.append((start, end + len(closer)))
            pos = end + len(closer)
        text = _cut(text, spans)
    return text


def _sql_spans(text):
    """SQL statements: from the keyword to `;`, a backtick or the end of the line, plus the lines
    that continue it (WHERE, AND, ORDER …)."""
    spans, pos = [], 0
    for attempt, match in enumerate(_SQL_START.finditer(text)):
        start = match.start()
        if attempt >= 1000:
            break
        if start < pos or not any(shape.match(text, start) for shape in _SQL_SHAPES):
            continue
        end = start
        for _ in range(50):
            line_end = text.find("\n", end)
            line_end = len(text) if line_end < 0 else line_end
            stops = [i for i in (text.find(";", end, line_end), text.find("`", end, line_end)) if i >= 0]
            if stops:
                end = min(stops) + (text[min(stops)] == ";")
                break
            end = line_end
            if line_end >= len(text) or not _SQL_CONTINUATION.match(text, line_end + 1):
                break
            end = line_end + 1
        if start > 0 and text[start - 1] == "`" and text.startswith("`", end):
            start, end = start - 1, end + 1  # inline code that held only the statement
        spans.append((start, end))
        pos = end
    return spans


def _cut(text, spans):
    """`text` without `spans`; a space keeps the words on both sides of a cut apart."""
    if not spans:
        return text
    pieces, pos = [], 0
    for start, end in sorted(spans):
        if end <= pos:
            continue
        pieces.append(text[pos : max(start, pos)])
        pos = end
    pieces.append(text[pos:])
    out, last = [pieces[0]], pieces[0][-1:]
    for piece in pieces[1:]:
        if piece and last and not last.isspace() and not piece[0].isspace():
            out.append(" ")
        out.append(piece)
        last = piece[-1:] or last
    return "".join(out)


def _guarded(text):
    """`text` with every forbidden marker removed, also the ones removal itself would create."""
    lowered = text.lower()
    if not any(marker in lowered for marker in _FORBIDDEN):
        return text
    out = []
    for char in text:
        out.append(char)
        if char.lower() in _FORBIDDEN_ENDS:
            tail = "".join(out[-12:]).lower()
            for marker in _FORBIDDEN:
                if tail.endswith(marker):
                    del out[-len(marker) :]
                    break
    return "".join(out)


_BLANK_LINES = re.compile(r"\n{3,}")
_INNER_SPACES = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")


def _tidy(text):
    """Whitespace left behind by removals, and a lead-in left with nothing to lead to ("Su caso está
    abierto. Además:" once what followed the colon was cut), unless it is all there is."""
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = _INNER_SPACES.sub(" ", _BLANK_LINES.sub("\n\n", text)).rstrip()
    if text.endswith(":"):
        end = max(text.rfind(mark, 0, len(text) - 1) for mark in ".!?…\n")
        if end >= 0 and text[:end + 1].strip():
            text = text[:end + 1].rstrip()
    return text
