"""Build the BFCL-derived routing set from the data inside the `bfcl-eval` wheel (Apache-2.0).

    .venv/bin/pip download bfcl-eval==2026.3.23 --no-deps -d /tmp/bfcl
    cd /tmp/bfcl && unzip -q bfcl_eval-2026.3.23-py3-none-any.whl -d x
    python datasets/build_bfcl.py /tmp/bfcl/x/bfcl_eval/data datasets/

What it takes (the wheel is unzipped, never installed):
- tool items: `BFCL_v4_live_multiple` entries whose functions are all Schema-Guided-Dialogue
  services (`Service_N_Intent`: flights, movies, events, weather…), single-turn, with the
  ground-truth function as `expected`. The catalog is the union of those functions, one version
  per (service, intent): where BFCL carries two versions of one service doing the same thing
  (Movies_1/Movies_3/Media_3 FindMovies, Services_1/Services_4 FindProvider), the most used one
  stays and the items of the others are dropped, so that top-1 is never a coin toss between twins.
- "none" items: `BFCL_v4_irrelevance` questions, minus the ones that touch a catalog domain
  (a keyword list below: such a question might be answerable by a catalog tool, so its label
  would be unsure). The filter looks at the question only, never at what the router answers.

Every definition becomes an MCP tool: `parameters` → `inputSchema` (`dict` → `object`), and
`_meta` gets `com.asixto/verb` derived from the intent name ("FindEvents" → "find events") and
`com.asixto/capabilities` from the service name. The sample is fixed (seeded) for stable figures.

The set is then split in two halves, `bfcl_sgd_dev.jsonl` (tuning allowed) and
`bfcl_sgd_heldout.jsonl` (never tuned on), by the hash of each item's id within each expected
label, so both halves have every tool and the same share of "none". The split was made before any
figure of either half was looked at; `python datasets/build_bfcl.py --split datasets/` redoes it
from `bfcl_sgd.jsonl` alone.

`python datasets/build_bfcl.py --extra DATA_DIR datasets/` writes `bfcl_sgd_dev_extra.jsonl`, more
tuning items from the wheel's items that the set above left out (see `extra`).
"""

import hashlib
import json
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

SGD = re.compile(r"^([A-Z][A-Za-z]+)_(\d+)_([A-Za-z]+)$")
DOMAIN_WORDS = re.compile(
    r"\b(movie|film|cinema|theater|theatre|music|song|album|artist|play|weather|forecast|rain|temperature|event|"
    r"concert|game|match|flight|fly|airline|bus|train|hotel|house|home|apartment|rent|restaurant|dine|dinner|food|"
    r"car|ride|taxi|cab|alarm|pay|payment|money|attraction|travel|trip|visit|museum|park|doctor|dentist|therapist|"
    r"stylist|salon|hair|ticket|book|reserve|reservation|schedule|appointment|provider|service)s?\b",
    re.IGNORECASE,
)
TOOL_ITEMS, NONE_ITEMS = 300, 140


def verb_of(intent: str) -> str:
    return " ".join(re.findall(r"[A-Z][a-z]*", intent)).lower()


def mcp_tool(function: dict) -> dict:
    service, _version, intent = SGD.match(function["name"]).groups()
    schema = json.loads(json.dumps(function.get("parameters") or {}).replace('"type": "dict"', '"type": "object"'))
    schema.setdefault("type", "object")
    return {
        "name": function["name"], "title": verb_of(intent).capitalize(), "description": function.get("description", ""),
        "inputSchema": schema,
        "_meta": {"com.asixto/verb": verb_of(intent), "com.asixto/capabilities": [service.lower()]},
    }


def pools(data_dir: Path):
    """The catalog and every usable tool item and "none" item of the wheel's data, before sampling."""
    rows = [json.loads(line) for line in open(data_dir / "BFCL_v4_live_multiple.json")]
    answers = {a["id"]: a for a in map(json.loads, open(data_dir / "possible_answer/BFCL_v4_live_multiple.json"))}
    usable = []
    for row in rows:
        names = {list(g)[0] for g in answers[row["id"]]["ground_truth"]}
        if len(row["question"]) == 1 and len(names) == 1 and all(SGD.match(f["name"]) for f in row["function"]):
            usable.append((row, names.pop()))
    # One version per (service family, intent): the most used.
    use = Counter(expected for _row, expected in usable)
    by_intent = defaultdict(list)
    for row, _e in usable:
        for function in row["function"]:
            by_intent[SGD.match(function["name"]).group(3)].append(function["name"])
    keep_name = {}
    for intent, names in by_intent.items():
        best = max(set(names), key=lambda n: (use[n], names.count(n)))
        for name in set(names):
            keep_name[name] = name == best
    catalog = {}
    items = []
    for row, expected in usable:
        if not keep_name[expected]:
            continue
        for function in row["function"]:
            if keep_name[function["name"]]:
                catalog.setdefault(function["name"], mcp_tool(function))
        messages = [{"role": m["role"], "content": m["content"]} for m in row["question"][0] if m["role"] in ("user", "assistant")]
        if messages and messages[-1]["role"] == "user":
            items.append({"id": f"bfcl-{row['id']}", "messages": messages, "expected": expected, "lang": "en", "style": "chat"})
    irrelevant = [json.loads(line) for line in open(data_dir / "BFCL_v4_irrelevance.json")]
    nones = []
    for row in irrelevant:
        text = row["question"][0][-1]["content"]
        if not DOMAIN_WORDS.search(text):
            nones.append({"id": f"bfcl-{row['id']}", "messages": [{"role": "user", "content": text}], "expected": None,
                          "lang": "en", "style": "chat"})
    return catalog, items, nones


def main(data_dir: Path, out_dir: Path):
    catalog, items, nones = pools(data_dir)
    rng = random.Random(20260323)
    items = rng.sample(items, min(TOOL_ITEMS, len(items)))
    nones = rng.sample(nones, min(NONE_ITEMS, len(nones)))
    dataset = sorted(items + nones, key=lambda item: item["id"])
    ordered = sorted(catalog.values(), key=lambda tool: tool["name"])
    (out_dir / "bfcl_sgd_catalog.json").write_text(json.dumps(ordered, ensure_ascii=False, indent=1) + "\n")
    with open(out_dir / "bfcl_sgd.jsonl", "w") as out:
        for item in dataset:
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"{len(ordered)} tools, {len(items)} tool items, {len(nones)} none items")
    split(out_dir)


def split(out_dir: Path):
    """`bfcl_sgd.jsonl` → its dev and held-out halves (alternating in id-hash order within each label)."""
    items = [json.loads(line) for line in open(out_dir / "bfcl_sgd.jsonl") if line.strip()]
    by_label = defaultdict(list)
    for item in items:
        by_label[item["expected"] or ""].append(item)
    halves = {"dev": [], "heldout": []}
    for _label, group in sorted(by_label.items()):
        group.sort(key=lambda item: hashlib.sha256(item["id"].encode()).hexdigest())
        for n, item in enumerate(group):
            halves["dev" if n % 2 == 0 else "heldout"].append(item)
    for half, chosen in halves.items():
        with open(out_dir / f"bfcl_sgd_{half}.jsonl", "w") as out:
            for item in sorted(chosen, key=lambda item: item["id"]):
                out.write(json.dumps(item, ensure_ascii=False) + "\n")
        print(f"{half}: {len(chosen)} items, {sum(item['expected'] is None for item in chosen)} none")


def extra(data_dir: Path, out_dir: Path):
    """`bfcl_sgd_dev_extra.jsonl`: more tuning items, from the wheel's items that `bfcl_sgd.jsonl`
    (so neither half) does not have: all its remaining "none" items and a seeded sample of its
    remaining tool items, so that 30% of the file is "none". Added after the first figures, for
    tuning only (dev); the held-out half is untouched."""
    _catalog, items, nones = pools(data_dir)
    with open(out_dir / "bfcl_sgd.jsonl") as handle:
        taken = {json.loads(line)["id"] for line in handle if line.strip()}
    items = [item for item in items if item["id"] not in taken]
    nones = [item for item in nones if item["id"] not in taken]
    rng = random.Random(20261201)
    items = rng.sample(items, min(len(items), round(len(nones) * 0.7 / 0.3)))
    with open(out_dir / "bfcl_sgd_dev_extra.jsonl", "w") as out:
        out.writelines(json.dumps(item, ensure_ascii=False) + "\n" for item in sorted(items + nones, key=lambda i: i["id"]))
    print(f"extra dev: {len(items) + len(nones)} items, {len(nones)} none")


if __name__ == "__main__":
    if sys.argv[1] == "--split":
        split(Path(sys.argv[2]))
    elif sys.argv[1] == "--extra":
        extra(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        main(Path(sys.argv[1]), Path(sys.argv[2]))
