"""Routing evaluation (R6): how well the cheap check decides "tool or none" and ranks candidates
on a labelled dataset. Pure over plain data; `manage.py routing_eval` is its command line.

DATASET: JSON lines `{"id", "messages": [{"role": "user" | "assistant", "content"}…], "expected":
tool name | null, "lang"?, "style"?}` (the last message is the one routed). CATALOG: a JSON list
of MCP tool definitions. Reported: gate accuracy with its confusion matrix (rows: expected, columns:
decided), candidate top-1 and recall@3 over the items that expect a tool, and routed accuracy (the
gate said "tool" and its first candidate is the expected one), overall, per language and per style;
and the cost: seconds to build the catalog index (once per catalog version, encoders loaded on
first use), milliseconds per message checked (wall clock: noisy on a shared machine).
"""

import json
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass

from runtime.routing import encoder
from runtime.routing.candidates import ToolCard, catalog_index
from runtime.routing.gate import check


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


def load_dataset(lines, names: set[str]) -> list[dict]:
    items = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise DatasetError(f"line {number}: not JSON ({exc})") from exc
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


@dataclass
class Tally:
    n: int = 0
    gate_right: int = 0
    tools: int = 0
    top1: int = 0
    recall3: int = 0
    routed: int = 0

    def add(self, expected, result):
        self.n += 1
        decided_tool = result.needs_tool
        self.gate_right += decided_tool == (expected is not None)
        if expected is not None:
            names = [name for name, _score in result.candidates]
            self.tools += 1
            self.top1 += bool(names) and names[0] == expected
            self.recall3 += expected in names[:3]
            self.routed += decided_tool and bool(names) and names[0] == expected

    def figures(self) -> dict:
        share = lambda part, whole: round(part / whole, 4) if whole else None  # noqa: E731
        return {"n": self.n, "gate_accuracy": share(self.gate_right, self.n), "tool_items": self.tools,
                "top1": share(self.top1, self.tools), "recall_at_3": share(self.recall3, self.tools),
                "routed_accuracy": share(self.routed, self.tools)}


def evaluate(cards: list[ToolCard], items: list[dict]) -> dict:
    started = time.perf_counter()
    index = catalog_index(cards)
    index_seconds = time.perf_counter() - started
    checking, with_e5, times = 0.0, 0, []
    overall, by_lang, by_style = Tally(), defaultdict(Tally), defaultdict(Tally)
    confusion = {"tool": {"tool": 0, "none": 0}, "none": {"tool": 0, "none": 0}}
    misses = []
    for item in items:
        started, e5_calls = time.perf_counter(), encoder.calls["e5"]
        result = check(index, item["messages"])
        times.append(time.perf_counter() - started)
        checking += times[-1]
        with_e5 += encoder.calls["e5"] > e5_calls
        expected = item["expected"]
        for tally in (overall, by_lang[item["lang"]], by_style[item["style"]]):
            tally.add(expected, result)
        confusion["tool" if expected else "none"]["tool" if result.needs_tool else "none"] += 1
        if result.needs_tool != (expected is not None) or (expected and result.best != expected):
            misses.append({"id": item["id"], "expected": expected, "decided": result.best if result.needs_tool else None,
                           "candidates": [name for name, _s in result.candidates], "reason": result.reason})
    return {**overall.figures(), "confusion": confusion, "index_seconds": round(index_seconds, 2),
            "ms_per_message": round(1000 * checking / max(len(items), 1), 1),
            "ms_median": round(1000 * statistics.median(times), 1) if times else 0.0,
            "ms_p90": round(1000 * sorted(times)[int(0.9 * (len(times) - 1))], 1) if times else 0.0,
            "e5_share": round(with_e5 / len(items), 4) if items else None,
            "by_lang": {k: v.figures() for k, v in sorted(by_lang.items())},
            "by_style": {k: v.figures() for k, v in sorted(by_style.items())}, "misses": misses}
