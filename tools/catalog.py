"""Pure catalog logic (M5, M6, C7): canonical hashing of definitions, diffs between listings,
prefixed names. Plain functions over plain data; the sync service wraps them."""

import hashlib
import json

# One definition of the model-visible name, where the M6 rule that checks it lives.
from tools.rules.names import prefixed_name  # noqa: F401 (re-exported for the sync)

MAX_MODEL_NAME = 64


def definition_hash(definition: dict) -> str:
    """Stable across key order, so a server that reorders JSON keys does not look changed."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


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


def split_listing(listing: list) -> tuple[list[dict], list[str]]:
    """Keep the well-formed definitions in server order; describe what had to be left out
    (not an object, no name, a name too long to store, duplicate name) so the admin sees it
    instead of losing it silently."""
    kept, problems, seen = [], [], set()
    for index, item in enumerate(listing):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            problems.append(f"#{index + 1}: no name")
        elif len(name) > MAX_NAME:
            problems.append(f"#{index + 1}: name longer than {MAX_NAME} characters")
        elif name in seen:
            problems.append(f"#{index + 1}: duplicate name {name!r}")
        else:
            seen.add(name)
            kept.append(item)
    return kept, problems


def diff_listing(live: dict[str, tuple[dict, str]], listing: list[dict]) -> dict:
    """Compare the stored live tools (name → (definition, its hash)) with a new listing (M5).
    A renamed tool is one removed and one added (C7)."""
    new_names = [definition["name"] for definition in listing]
    new_set = set(new_names)
    added = [name for name in new_names if name not in live]
    removed = [name for name in live if name not in new_set]
    changed = []
    for definition in listing:
        old = live.get(definition["name"])
        if old is not None and old[1] != definition_hash(definition):
            changed.append({"name": definition["name"], "fields": changed_fields(old[0], definition)})
    return {"added": added, "removed": removed, "changed": changed}
