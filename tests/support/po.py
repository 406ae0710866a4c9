"""A small reader for gettext .po files (polib is not a dependency): enough to find entries
that are untranslated or fuzzy. Obsolete entries (`#~`) are skipped."""

import ast
from dataclasses import dataclass, field


@dataclass
class Entry:
    msgid: str = ""
    msgid_plural: str = ""
    msgctxt: str | None = None
    msgstr: dict = field(default_factory=dict)  # index → text ("0" for the singular form)
    flags: set = field(default_factory=set)
    references: list = field(default_factory=list)

    @property
    def translated(self) -> bool:
        return bool(self.msgstr) and all(self.msgstr.values())

    @property
    def fuzzy(self) -> bool:
        return "fuzzy" in self.flags


def _text(line: str) -> str:
    return ast.literal_eval(line)  # a C-style quoted string; the .po escapes are Python's


def parse(text: str) -> list[Entry]:
    entries, entry, target = [], Entry(), None

    def finish():
        nonlocal entry, target
        if entry.msgid or entry.msgstr:
            entries.append(entry)
        entry, target = Entry(), None

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            finish()
        elif line.startswith("#~"):
            continue
        elif line.startswith("#,"):
            entry.flags |= {flag.strip() for flag in line[2:].split(",")}
        elif line.startswith("#:"):
            entry.references += line[2:].split()
        elif line.startswith("#"):
            continue
        elif line.startswith("msgctxt "):
            entry.msgctxt, target = _text(line[8:]), "msgctxt"
        elif line.startswith("msgid_plural "):
            entry.msgid_plural, target = _text(line[13:]), "msgid_plural"
        elif line.startswith("msgid "):
            if entry.msgstr:  # a new entry without a blank line before it
                finish()
            entry.msgid, target = _text(line[6:]), "msgid"
        elif line.startswith("msgstr["):
            index, _sep, rest = line[7:].partition("] ")
            entry.msgstr[index], target = _text(rest), ("msgstr", index)
        elif line.startswith("msgstr "):
            entry.msgstr["0"], target = _text(line[7:]), ("msgstr", "0")
        elif line.startswith('"') and target:
            if isinstance(target, tuple):
                entry.msgstr[target[1]] += _text(line)
            else:
                setattr(entry, target, getattr(entry, target) + _text(line))
    finish()
    return [item for item in entries if item.msgid]  # the header has an empty msgid
