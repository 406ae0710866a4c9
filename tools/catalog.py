"""Pure catalog logic (M5, M6, C7): reading a listing (canonical form, hash, size bound),
diffs between listings, prefixed names. Plain functions over plain data; the sync wraps them."""

import hashlib
import json
from dataclasses import dataclass

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from tools.rules import tool_level

# One definition of the model-visible name, where the M6 rule that checks it lives.
from tools.rules.names import prefixed_name  # noqa: F401 (re-exported for the sync)

MAX_MODEL_NAME = 64


def definition_hash(definition: dict) -> str:
    """Stable across key order, so a server that reorders JSON keys does not look changed."""
    return hashlib.sha256(canonical_json(definition).encode()).hexdigest()


def changed_fields(old: dict, new: dict) -> list[str]:
    """Top-level fields that differ; annotation and _meta changes are named one by one so the
    diff page says "annotations.readOnlyHint", not just "annotations"."""
    fields = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) == new.get(key):
            continue
        if key in ("annotations", "_meta") and isinstance(old.get(key), dict | None) and isinstance(new.get(key), dict | None):
            inner_old, inner_new = old.get(key) or {}, new.get(key) or {}
            fields += [f"{key}.{inner}" for inner in sorted(set(inner_old) | set(inner_new)) if inner_old.get(inner) != inner_new.get(inner)]
        else:
            fields.append(key)
    return fields


MAX_NAME = 200  # what the catalog stores; C1 flags anything over 64 anyway
# The key of the stand-in stored for a definition too large to keep (M5): its size and the limit.
OMITTED_KEY = "com.asixto/omitted"


@dataclass(frozen=True)
class ListedTool:
    """One well-formed tool of a listing, as the sync stores it."""

    name: str
    definition: dict  # as sent, or a stand-in {name, OMITTED_KEY: {bytes, limit}} when too large
    hash: str  # of the definition as sent, so a change is seen even when it is not stored
    level: str
    # `definition` as JSON (canonical_json), for writing it without serialising it again; None
    # for a stand-in.
    text: str | None = None


def canonical_json(definition: dict) -> str:
    return json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_listing(listing: list, *, max_definition_bytes: int) -> tuple[list[ListedTool], list]:
    """The well-formed definitions in server order, each serialised once for its hash and size;
    and what had to be left out (not an object, no name, a name too long to store, a duplicate
    name), so the admin sees it instead of losing it silently. A definition over
    `max_definition_bytes` is replaced by a stand-in that says how large it was."""
    kept, problems, seen = [], [], set()
    for index, item in enumerate(listing):
        name = item.get("name") if isinstance(item, dict) else None
        number = index + 1
        if not isinstance(name, str) or not name:
            problems.append(format_lazy(_("#{number}: no name"), number=number))
            continue
        canonical = canonical_json(item)
        if "\\u0000" in canonical and _has_nul(item):
            # PostgreSQL cannot store a NUL character in text or jsonb.
            problems.append(format_lazy(_("#{number}: a NUL character"), number=number))
        elif len(name) > MAX_NAME:
            problems.append(format_lazy(_("#{number}: name longer than {limit} characters"), number=number, limit=MAX_NAME))
        elif name in seen:
            problems.append(format_lazy(_("#{number}: duplicate name {name}"), number=number, name=name))
        else:
            seen.add(name)
            encoded = canonical.encode()
            level = tool_level(item.get("annotations"))
            text = canonical
            if len(encoded) > max_definition_bytes:
                item = {"name": name, OMITTED_KEY: {"bytes": len(encoded), "limit": max_definition_bytes}}
                text = None
            kept.append(ListedTool(name=name, definition=item, hash=hashlib.sha256(encoded).hexdigest(), level=level, text=text))
    return kept, problems


def _has_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(key) or _has_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


def diff_listing(live: dict[str, str], listed: list[ListedTool], old_definitions: dict[str, dict]) -> dict:
    """Compare the stored live tools (name → definition hash) with a new listing (M5).
    `old_definitions` holds the stored definitions of the tools whose hash changed, for the
    changed fields. A renamed tool is one removed and one added (C7)."""
    names = {entry.name for entry in listed}
    added = [entry.name for entry in listed if entry.name not in live]
    removed = [name for name in live if name not in names]
    changed = [
        {"name": entry.name, "fields": changed_fields(old_definitions.get(entry.name, {}), entry.definition)}
        for entry in listed
        if entry.name in live and live[entry.name] != entry.hash
    ]
    return {"added": added, "removed": removed, "changed": changed}
