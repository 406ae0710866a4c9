"""Fit the cheap check's learned parts (runtime/routing/gate.py) on development domains only, and measure
them the honest way: leave one domain out.

    python datasets/fit_gate.py --lodo [--examples] [--only DOMAIN …]   # figures of every domain, fitted without it
    python datasets/fit_gate.py --write                                  # fit on every dev domain, write the probes,
                                                                         # print the gate's constants for gate.py

A *domain* is one business: its catalog and its items. The development domains are the support desk
(`asixto_soporte_dev*.jsonl` with the spent `_heldout3` and `_heldout5`, read against its own 15-tool catalog
and against the example server's 3 thin tools), the BFCL dev half (with its `_extra` file), and every folder
of `datasets/domains/` (`catalog.json`, `items.jsonl`, `examples.jsonl`: written by helpers who saw only a
catalog and the format). `datasets/heldout_domains/` is never read here.

What is fitted, each on the domains it is given (each domain weighs the same, its classes alike):
- the request probe (`request_probe.json`): log-odds that a message asks a desk for something, a logistic
  regression over its USE vector, on stand-alone messages (a follow-up's label is its conversation's);
- the action probe (`action_probe.json`): log-odds that a request asks to change something rather than to
  know, over its USE vector, on stand-alone messages that expect a tool, labelled by the tool's level;
- the gate and the cheap gate (logistic regressions over `gate.gate_features` / `gate.cheap_features`, the
  request probe's feature out of fold by domain), and the cascade band.

`--lodo` fits all of it without each domain in turn and runs `evaluation.evaluate` (the check as a turn runs
it) on the left-out one; `--examples` adds a run with the domain's `examples.jsonl`. A change goes in only if
the left-out figures say so.
"""

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import django
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")  # the language detector reads the settings
django.setup()

from runtime.routing import encoder, gate  # noqa: E402
from runtime.routing.candidates import catalog_index  # noqa: E402
from runtime.routing.evaluation import evaluate, load_catalog, load_dataset, load_examples  # noqa: E402
from runtime.routing.words import normalise  # noqa: E402

DATA = ROOT / "datasets"
SUPPORT = ("asixto_soporte_dev.jsonl asixto_soporte_dev_extra.jsonl asixto_soporte_dev_extra2.jsonl "
           "asixto_soporte_heldout3.jsonl asixto_soporte_heldout5.jsonl")
L2, STEPS, RATE = 10.0, 4000, 0.1
PROBE_L2 = 10.0  # the probes' penalty (512 inputs)
MAX_CASCADE_ERRORS = 0.02  # share of dev items the cheap gate may decide wrongly on its own


@dataclass
class Part:
    """One catalog and the items read against it."""

    catalog: str  # a file under datasets/, or "examples.soporte"
    files: list[str]  # under datasets/
    examples: str | None = None


@dataclass
class Domain:
    name: str
    parts: list[Part]


def dev_domains() -> list[Domain]:
    found = [Domain("support", [Part("asixto_soporte_catalog.json", SUPPORT.split()), Part("examples.soporte", SUPPORT.split())]),
             Domain("bfcl", [Part("bfcl_sgd_catalog.json", ["bfcl_sgd_dev.jsonl", "bfcl_sgd_dev_extra.jsonl"])])]
    for folder in sorted((DATA / "domains").iterdir()) if (DATA / "domains").is_dir() else []:
        if (folder / "catalog.json").exists() and (folder / "items.jsonl").exists():
            examples = folder / "examples.jsonl"
            found.append(Domain(folder.name, [Part(f"domains/{folder.name}/catalog.json", [f"domains/{folder.name}/items.jsonl"],
                                                   f"domains/{folder.name}/examples.jsonl" if examples.exists() else None)]))
    return found


def cards_of(catalog: str):
    if catalog == "examples.soporte":
        from examples.soporte.definitions import ABRIR_CASO_SOPORTE, BUSCAR_PRODUCTO, CONSULTAR_CASO

        return load_catalog(json.dumps([ABRIR_CASO_SOPORTE, CONSULTAR_CASO, BUSCAR_PRODUCTO]))
    return load_catalog((DATA / catalog).read_text())


def items_of(part: Part, names: set[str]) -> list[dict]:
    """The items of `part` whose tool is in `names` (or none)."""
    found = []
    for name in part.files:
        with open(DATA / name, encoding="utf-8") as handle:
            lines = [line for line in handle if line.strip() and json.loads(line).get("expected") in names | {None}]
        found += load_dataset(lines, names)
    return found


@dataclass
class Row:
    """One item's last message, read with e5 against its part's catalog."""

    domain: str
    reading: gate.Reading
    use: np.ndarray
    needs_tool: bool
    acts: bool | None  # its tool changes something (None: no tool)
    alone: bool  # a message of its own (no earlier messages)
    top_right: bool  # the cheap ranking's top-1 is the expected tool


_rows_cache: dict = {}


def rows_of(domain: Domain) -> list[Row]:
    if domain.name in _rows_cache:
        return _rows_cache[domain.name]
    rows = []
    for part in domain.parts:
        cards = cards_of(part.catalog)
        levels = {card.name: card.acts for card in cards}
        items = items_of(part, set(levels))
        index = catalog_index(cards)
        texts = [item["messages"][-1]["content"] for item in items]
        readings = gate.read(index, texts, cascade=False)
        uses = encoder.embed([normalise(t) or t for t in texts])
        for item, reading, use in zip(items, readings, uses):
            if reading is None:
                continue
            top = index.cards[int(np.argmax(gate.cheap_scores(reading.signals)))].name
            rows.append(Row(domain.name, reading, use, item["expected"] is not None,
                            levels.get(item["expected"]), len(item["messages"]) == 1, top == item["expected"]))
    _rows_cache[domain.name] = rows
    return rows


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = L2):
    """Weighted logistic regression on standardised features (gradient descent); coefficients for raw ones."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = (x - mean) / scale
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        g = (p - y) * weight
        w -= RATE * (z.T @ g / weight.sum() + l2 * w / len(y))
        b -= RATE * g.sum() / weight.sum()
    coefficients = w / scale
    return coefficients, b - float((w * mean / scale).sum())


def balanced(groups: list[str], y: np.ndarray) -> np.ndarray:
    """Each group weighs the same, and within it each class."""
    groups = np.array(groups)
    weight = np.zeros(len(y))
    for name in set(groups):
        mine = groups == name
        positives = y[mine].sum()
        negatives = mine.sum() - positives
        weight[mine] = np.where(y[mine] == 1, 0.5 / max(positives, 1), 0.5 / max(negatives, 1))
    return weight * len(weight) / weight.sum()


def fit_probe(rows: list[Row], label) -> tuple[np.ndarray, float]:
    chosen = [(r, label(r)) for r in rows if r.alone and label(r) is not None]
    x = np.array([r.use for r, _l in chosen])
    y = np.array([float(l) for _r, l in chosen])
    return fit(x, y, balanced([r.domain for r, _l in chosen], y), PROBE_L2)


def _request_label(row: Row):
    return row.needs_tool


def _action_label(row: Row):
    return row.acts


def log_odds(probe, use: np.ndarray) -> float:
    w, b = probe
    return float(np.clip(use @ w + b, -gate.PROBE_CLIP, gate.PROBE_CLIP))


def _with_probes(row: Row, request: float, action: float) -> gate.Reading:
    """The row's reading as the fitted probes read it (the scores move with the action probe)."""
    signals = replace(row.reading.signals, acts=action)
    return replace(row.reading, signals=signals, scores=gate.tool_scores(signals), request=request)


def cascade_band(p, y, right, margin, talk, budget_share=MAX_CASCADE_ERRORS):
    """The widest band of the cheap gate where it decides alone with at most `budget_share` of the dev
    items decided wrongly by it (no tool below `low`; a tool, ranked right, above `high` with `margin`)."""
    budget = budget_share * len(y)
    best = (0.0, 1.0, 99.0, 0)
    for low in np.arange(0.0, 0.5, 0.01):
        no = (p <= low) & ~talk
        errors_low = int((no & (y == 1)).sum())
        if errors_low > budget / 2:
            break
        for high in np.arange(0.99, 0.5, -0.01):
            for m in (0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0):
                yes = (p >= high) & (margin >= m) & ~no & ~talk
                errors = errors_low + int((yes & ((y == 0) | ~right)).sum())
                settled = int((no | yes | talk).sum())
                if errors <= budget and settled > best[3]:
                    best = (round(float(low), 2), round(float(high), 2), m, settled)
    return best


@dataclass
class Fitted:
    request: tuple
    action: tuple
    gate: tuple
    cheap: tuple
    band: tuple


def fit_all(domains: list[Domain]) -> Fitted:
    rows = [row for domain in domains for row in rows_of(domain)]
    request, action = fit_probe(rows, _request_label), fit_probe(rows, _action_label)
    # The request probe's feature out of fold (by domain): the gate learns what the probe says of unseen words.
    unseen = {}
    for domain in domains:
        others = [r for r in rows if r.domain != domain.name]
        probe = fit_probe(others, _request_label) if others else request
        unseen.update({id(r): log_odds(probe, r.use) for r in rows if r.domain == domain.name})
    readings = [_with_probes(r, unseen[id(r)], log_odds(action, r.use)) for r in rows]
    y = np.array([float(r.needs_tool) for r in rows])
    weight = balanced([r.domain for r in rows], y)
    full = fit(np.array([gate.gate_features(r) for r in readings]), y, weight)
    xc = np.array([gate.cheap_features(r) for r in readings])
    cheap = fit(xc, y, weight)
    p = 1 / (1 + np.exp(-(xc @ cheap[0] + cheap[1])))
    margins = np.array([gate._margin(gate.cheap_scores(r.signals)) for r in readings])
    band = cascade_band(p, y, np.array([r.top_right for r in rows]), margins, np.array([r.is_small_talk for r in readings]))
    return Fitted(request, action, full, cheap, band)


def _probe_file(probe, files: list[str]) -> str:
    w, b = probe
    return json.dumps({"fitted_by": "datasets/fit_gate.py", "input": "USE vector of the normalised message",
                       "domains": files, "bias": round(float(b), 6), "weights": [round(float(v), 6) for v in w]}) + "\n"


def apply(fitted: Fitted, folder: Path, names: list[str]) -> None:
    """The check reads `fitted` from now on, in this process (the probes from files in `folder`)."""
    for attribute, probe, filename in (("REQUEST_PROBE", fitted.request, "request"), ("ACTION_PROBE", fitted.action, "action")):
        path = folder / f"{filename}_probe.json"
        path.write_text(_probe_file(probe, names))
        setattr(gate, attribute, path)
    gate._load_probe.cache_clear()
    gate.GATE_COEFFICIENTS, gate.GATE_BIAS = tuple(float(c) for c in fitted.gate[0]), float(fitted.gate[1])
    gate.CHEAP_COEFFICIENTS, gate.CHEAP_BIAS = tuple(float(c) for c in fitted.cheap[0]), float(fitted.cheap[1])
    gate.CASCADE_LOW, gate.CASCADE_HIGH, gate.CASCADE_MARGIN = fitted.band[:3]


def evaluate_domain(domain: Domain, *, examples: bool) -> dict:
    """The check's figures on `domain` (its first part: the catalog a tenant of that business would have)."""
    part = domain.parts[0]
    cards = cards_of(part.catalog)
    names = {card.name for card in cards}
    items = items_of(part, names)
    taught = []
    if examples and part.examples:
        with open(DATA / part.examples, encoding="utf-8") as handle:
            taught = load_examples(handle, names)
    report = evaluate(cards, items, taught)
    keys = ("n", "gate_accuracy", "top1", "recall_at_3", "harmful_routes", "harmful_share", "ms_median", "ms_p90")
    return {key: report[key] for key in keys} | {"misses": report["misses"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lodo", action="store_true", help="leave-one-domain-out figures")
    parser.add_argument("--examples", action="store_true", help="also with each domain's examples.jsonl")
    parser.add_argument("--only", nargs="*", help="only these left-out domains")
    parser.add_argument("--misses", action="store_true", help="print the left-out domains' misses")
    parser.add_argument("--write", action="store_true", help="fit on every dev domain and write the probes")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="try another value of a constant of gate.py (W_LEVEL=1.5): for choosing it by --lodo")
    options = parser.parse_args()
    for assignment in options.set:
        name, value = assignment.split("=", 1)
        if not hasattr(gate, name):
            parser.error(f"gate.py has no constant {name}")
        setattr(gate, name, type(getattr(gate, name))(value))
    domains = dev_domains()
    if options.lodo:
        table = {}
        for left in domains:
            if options.only and left.name not in options.only:
                continue
            others = [d for d in domains if d.name != left.name]
            with tempfile.TemporaryDirectory() as folder:
                apply(fit_all(others), Path(folder), [d.name for d in others])
                table[left.name] = evaluate_domain(left, examples=False)
                if options.examples:
                    table[left.name + "+examples"] = evaluate_domain(left, examples=True)
        if len(table) > 1:
            for key in ("gate_accuracy", "top1", "recall_at_3", "harmful_share"):
                values = [f[key] for f in table.values() if f[key] is not None]
                print(f"# {key}: mean {np.mean(values):.3f}, worst {min(values) if key != 'harmful_share' else max(values):.3f}")
        for name, figures in table.items():
            print(f"{name:<22} n={figures['n']:<4} gate={figures['gate_accuracy']:<6} top1={figures['top1']:<6} "
                  f"recall@3={figures['recall_at_3']:<6} harmful={figures['harmful_routes']} ({figures['harmful_share']}) "
                  f"ms median {figures['ms_median']}, p90 {figures['ms_p90']}")
            if options.misses:
                for miss in figures["misses"]:
                    print(f"    {miss}")
        print(json.dumps({name: {k: v for k, v in f.items() if k != "misses"} for name, f in table.items()}))
    if options.write:
        fitted = fit_all(domains)
        names = [d.name for d in domains]
        (ROOT / "runtime/routing/request_probe.json").write_text(_probe_file(fitted.request, names))
        (ROOT / "runtime/routing/action_probe.json").write_text(_probe_file(fitted.action, names))
        print("GATE_COEFFICIENTS = (" + ", ".join(f"{c:.4f}" for c in fitted.gate[0]) + ")")
        print(f"GATE_BIAS = {fitted.gate[1]:.4f}")
        print("CHEAP_COEFFICIENTS = (" + ", ".join(f"{c:.4f}" for c in fitted.cheap[0]) + ")")
        print(f"CHEAP_BIAS = {fitted.cheap[1]:.4f}")
        print(f"CASCADE_LOW, CASCADE_HIGH, CASCADE_MARGIN = {fitted.band[0]:.2f}, {fitted.band[1]:.2f}, {fitted.band[2]}")


if __name__ == "__main__":
    main()
