"""Routing evaluation (R6): how well the cheap check decides "tool or none" and ranks candidates
on a labelled dataset. Pure over plain data; `manage.py routing_eval` is its command line.

DATASET: JSON lines `{"id", "messages": [{"role": "user" | "assistant", "content"}…], "expected":
tool name | null, "lang"?, "style"?}` (the last message is the one routed). CATALOG: a JSON list
of MCP tool definitions. EXAMPLES (optional): JSON lines `{"tool": tool name | null, "text": "…"}`,
what a tenant teaches the check (an example request of a tool, or of "no tool"). Reported: gate
accuracy with its confusion matrix (rows: expected, columns: decided), candidate top-1 and recall@3
over the items that expect a tool, routed accuracy (the gate said "tool" and its first candidate is
the expected one), and harmful routes (an item that needs no tool or only a read tool, routed to a
tool that changes something: its level from its annotations, as the catalog reads them), overall,
per language, per style and for follow-ups; and the cost: seconds to build the catalog index (once
per catalog version, encoders loaded on first use), milliseconds per message checked (wall clock:
noisy on a shared machine).
"""

import json
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass

from runtime.routing import encoder
from runtime.routing.candidates import Example, ToolCard, catalog_index
from runtime.routing.gate import check
from tools.routing_examples import MAX_TEXT as MAX_EXAMPLE_TEXT
from tools.rules.annotations import READ


class DatasetError(ValueError):
    """The dataset or the catalog cannot be read: the message says where and why."""


def load_catalog(text: str) -> list[ToolCard]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DatasetError(f"catalog: not JSON ({exc})") from exc
    if not isinstance(data, list) or not all(isinstance(d, dict) and isinstance(d.get("name"), str) for d in data):
        raise DatasetError("catalog: expected a JSON list of tool definitions, each with a name")
    return [ToolCard.from_definition(d) for d in data]


def _json_lines(lines, where: str):
    """(line number, object) of each non-blank line; a line that is not JSON stops it all, named."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            raise DatasetError(f"{where}line {number}: not JSON ({exc})") from exc


def load_dataset(lines, names: set[str]) -> list[dict]:
    items = []
    for number, item in _json_lines(lines, ""):
        messages = item.get("messages") if isinstance(item, dict) else None
        if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and m.get("role") in ("user", "assistant") and isinstance(m.get("content"), str)
            for m in messages
        ):
            raise DatasetError(f"line {number}: messages must be a non-empty list of user/assistant messages")
        if messages[-1]["role"] != "user":
            raise DatasetError(f"line {number}: the last message must be the customer's (role user)")
        expected = item.get("expected")
        if expected is not None and expected not in names:
            raise DatasetError(f"line {number}: expected tool {expected!r} is not in the catalog")
        items.append({"id": str(item.get("id", number)), "messages": messages, "expected": expected,
                      "lang": str(item.get("lang") or "?"), "style": str(item.get("style") or "?")})
    return items


def load_examples(lines, names: set[str]) -> list[Example]:
    """The examples of an EXAMPLES file; the first bad line stops it all (the error names it)."""
    examples = []
    for number, item in _json_lines(lines, "examples "):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            raise DatasetError(f"examples line {number}: expected {{\"tool\": name or null, \"text\": \"…\"}} with a text")
        if len(item["text"]) > MAX_EXAMPLE_TEXT:
            raise DatasetError(f"examples line {number}: the text is longer than {MAX_EXAMPLE_TEXT} characters")
        tool = item.get("tool")
        if tool is not None and tool not in names:
            raise DatasetError(f"examples line {number}: tool {tool!r} is not in the catalog")
        examples.append(Example(tool=tool, text=item["text"].strip()))
    return examples


@dataclass
class Tally:
    n: int = 0
    gate_right: int = 0
    tools: int = 0
    top1: int = 0
    recall3: int = 0
    routed: int = 0
    safe: int = 0  # items that need no tool or only a read tool
    harmful: int = 0  # of those, routed to a tool that changes something

    def add(self, expected, result, levels: dict):
        self.n += 1
        decided_tool = result.needs_tool
        self.gate_right += decided_tool == (expected is not None)
        if expected is not None:
            names = [name for name, _score in result.candidates]
            self.tools += 1
            self.top1 += bool(names) and names[0] == expected
            self.recall3 += expected in names[:3]
            self.routed += decided_tool and bool(names) and names[0] == expected
        if expected is None or levels[expected] == READ:
            self.safe += 1
            self.harmful += decided_tool and levels.get(result.best) not in (None, READ)

    def figures(self) -> dict:
        share = lambda part, whole: round(part / whole, 4) if whole else None  # noqa: E731
        return {"n": self.n, "gate_accuracy": share(self.gate_right, self.n), "tool_items": self.tools,
                "top1": share(self.top1, self.tools), "recall_at_3": share(self.recall3, self.tools),
                "routed_accuracy": share(self.routed, self.tools), "harmful_routes": self.harmful,
                "harmful_share": share(self.harmful, self.safe)}


def evaluate(cards: list[ToolCard], items: list[dict], examples: list[Example] = ()) -> dict:
    levels = {card.name: card.level for card in cards}
    started = time.perf_counter()
    index = catalog_index(cards, examples)
    index_seconds = time.perf_counter() - started
    checking, with_e5, times = 0.0, 0, []
    overall, by_lang, by_style, follow_ups = Tally(), defaultdict(Tally), defaultdict(Tally), Tally()
    confusion = {"tool": {"tool": 0, "none": 0}, "none": {"tool": 0, "none": 0}}
    misses = []
    for item in items:
        encoder.forget()  # each item costs what a message never seen before costs (its earlier messages too)
        started, e5_calls = time.perf_counter(), encoder.calls["e5"]
        result = check(index, item["messages"])
        times.append(time.perf_counter() - started)
        checking += times[-1]
        with_e5 += encoder.calls["e5"] > e5_calls
        expected = item["expected"]
        tallies = [overall, by_lang[item["lang"]], by_style[item["style"]]]
        if len(item["messages"]) > 1:
            tallies.append(follow_ups)
        for tally in tallies:
            tally.add(expected, result, levels)
        confusion["tool" if expected else "none"]["tool" if result.needs_tool else "none"] += 1
        if result.needs_tool != (expected is not None) or (expected and result.best != expected):
            decided = result.best if result.needs_tool else None
            misses.append({"id": item["id"], "expected": expected, "decided": decided,
                           "candidates": [name for name, _s in result.candidates], "reason": result.reason,
                           "harmful": (expected is None or levels[expected] == READ)
                           and levels.get(decided) not in (None, READ)})
    return {**overall.figures(), "confusion": confusion, "index_seconds": round(index_seconds, 2),
            "ms_per_message": round(1000 * checking / max(len(items), 1), 1),
            "ms_median": round(1000 * statistics.median(times), 1) if times else 0.0,
            "ms_p90": round(1000 * sorted(times)[int(0.9 * (len(times) - 1))], 1) if times else 0.0,
            "e5_share": round(with_e5 / len(items), 4) if items else None,
            "by_lang": {k: v.figures() for k, v in sorted(by_lang.items())},
            "by_style": {k: v.figures() for k, v in sorted(by_style.items())}, "follow_ups": follow_ups.figures(),
            "examples": len(examples), "misses": misses}
