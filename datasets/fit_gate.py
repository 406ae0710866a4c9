"""Fit the cheap check's gate (runtime/routing/gate.py) on the development files only.

    python datasets/fit_gate.py

Reads the development files (the support set's five: `asixto_soporte_dev.jsonl`, `_dev_extra.jsonl`,
`_dev_extra2.jsonl`, and `_heldout3.jsonl` and `_heldout5.jsonl`, both spent as held-out sets and tuned on since; and
`bfcl_sgd_dev.jsonl` with `bfcl_sgd_dev_extra.jsonl`; each group as one set; never a held-out file).

First the request probe (`runtime/routing/request_probe.json`): a class-balanced logistic regression over
the USE vector of each dev item's message, whatever the catalog (each file weighs the same), on the items of
one message only (a follow-up's label, "¿y en rojo?" needs a tool, is its conversation's). The gate weighs its
log-odds as one feature; to fit the gate on what the probe says of messages it has not seen, each file's
probe feature comes from a probe fitted without that file (out of fold); a follow-up's last message, never
in the probe's data, gets the shipped probe's value.

Then the gate: computes the gate's features of each item's last message with the code the check runs (`gate.read`,
`gate.gate_features`), fits a class-balanced logistic regression with a small L2 penalty on
standardised features (plain numpy gradient descent), and prints GATE_COEFFICIENTS and GATE_BIAS
for the raw features, to be pasted into gate.py. Each dev set weighs the same in the fit.

The support dev set is read twice: against its own 15-tool catalog, and against the 3 thin tools of
the example server (examples/soporte: fewer words per tool, so lower similarities), keeping there
only the items whose tool it has and the "none" items. A gate fitted on one catalog alone learns
how rich that catalog's descriptions are; two catalogs make it learn what a request looks like.
"""

import json
import os
import sys
from pathlib import Path

import django
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")  # the language detector reads the settings
django.setup()

from runtime.routing.candidates import catalog_index  # noqa: E402
from runtime.routing.evaluation import load_catalog, load_dataset  # noqa: E402
from runtime.routing import encoder  # noqa: E402
from runtime.routing.gate import (  # noqa: E402
    PROBE_CLIP, REQUEST_PROBE, _margin, _probe, cheap_features, cheap_scores, gate_features, read)
from runtime.routing.words import normalise  # noqa: E402

SUPPORT = ("asixto_soporte_dev.jsonl asixto_soporte_dev_extra.jsonl asixto_soporte_dev_extra2.jsonl "
           "asixto_soporte_heldout3.jsonl asixto_soporte_heldout5.jsonl")
DEV = [(SUPPORT, "asixto_soporte_catalog.json"),
       ("bfcl_sgd_dev.jsonl bfcl_sgd_dev_extra.jsonl", "bfcl_sgd_catalog.json"),
       (SUPPORT, "examples.soporte")]
L2, STEPS, RATE = 10.0, 4000, 0.1
PROBE_L2 = 10.0  # the request probe's penalty (512 inputs): 10, 30 and 100 gave dev accuracies within an item or two
MAX_CASCADE_ERRORS = 0.01  # share of dev items the cheap gate may decide wrongly on its own


def _cards(catalog: str):
    if catalog == "examples.soporte":
        from examples.soporte.definitions import ABRIR_CASO_SOPORTE, BUSCAR_PRODUCTO, CONSULTAR_CASO

        return load_catalog(json.dumps([ABRIR_CASO_SOPORTE, CONSULTAR_CASO, BUSCAR_PRODUCTO]))
    return load_catalog((ROOT / "datasets" / catalog).read_text())


def _items(dataset: str, names: set[str]) -> list[tuple[str, dict]]:
    """(file, item) of the files of `dataset` whose tool is in `names` (or none)."""
    found = []
    for name in dataset.split():  # one set, maybe in several files
        with open(ROOT / "datasets" / name, encoding="utf-8") as handle:
            lines = [line for line in handle if line.strip() and json.loads(line).get("expected") in names | {None}]
        found += [(name, item) for item in load_dataset(lines, names)]
    return found


def features(dataset: str, catalog: str, probe: dict):
    """Per dev item of `dataset` against `catalog`: the full gate's features, the cheap gate's,
    whether a tool is expected, and whether the cheap ranking's top-1 is the expected tool. The
    request probe's feature (the last of each gate) is `probe`'s out-of-fold value for the item."""
    cards = _cards(catalog)
    found = _items(dataset, {card.name for card in cards})
    items = [item for _name, item in found]
    index = catalog_index(cards)
    readings = read(index, [item["messages"][-1]["content"] for item in items], cascade=False)
    cheap_top = [index.cards[int(np.argmax(cheap_scores(r.signals)))].name for r in readings]
    unseen = [probe.get((name, item["id"]), reading.request) / PROBE_CLIP for (name, item), reading in zip(found, readings)]
    return ([[*gate_features(r)[:-1], u] for r, u in zip(readings, unseen)],
            [[*cheap_features(r)[:-1], u] for r, u in zip(readings, unseen)],
            [item["expected"] is not None for item in items],
            [top == item["expected"] for top, item in zip(cheap_top, items)],
            [_margin(cheap_scores(r.signals)) for r in readings], [r.is_small_talk for r in readings])


def request_probe() -> dict:
    """Fits the request probe on every dev file's stand-alone messages (each file weighs the same, its two
    classes alike), writes it to REQUEST_PROBE, and returns each such item's out-of-fold log-odds by (file, id):
    from a probe fitted on the other files."""
    rows = []  # (file, id, USE vector, needs a tool)
    for dataset, catalog in [(d, c) for d, c in DEV if c != "examples.soporte"]:  # each file once
        # Messages that stand alone: a follow-up's label ("¿y en rojo?" needs a tool) is its conversation's.
        found = [(name, item) for name, item in _items(dataset, {card.name for card in _cards(catalog)})
                 if len(item["messages"]) == 1]
        vectors = encoder.embed([normalise(item["messages"][-1]["content"]) for _name, item in found])
        rows += [(name, item["id"], v, item["expected"] is not None) for (name, item), v in zip(found, vectors)]
    files = np.array([row[0] for row in rows])
    x, y = np.array([row[2] for row in rows]), np.array([row[3] for row in rows], dtype=float)
    weight = np.zeros(len(y))
    for name in set(files):  # balanced within each file, each file the same
        mine = files == name
        weight[mine] = np.where(y[mine] == 1, 0.5 / y[mine].sum(), 0.5 / (len(y[mine]) - y[mine].sum()))
    unseen = np.zeros(len(y))
    for name in set(files):
        w, b = fit(x[files != name], y[files != name], _normalised(weight[files != name]), PROBE_L2)
        unseen[files == name] = x[files == name] @ w + b
    w, b = fit(x, y, _normalised(weight), PROBE_L2)
    REQUEST_PROBE.write_text(json.dumps({
        "fitted_by": "datasets/fit_gate.py", "input": "USE vector of the normalised message", "files": sorted(set(files)),
        "bias": round(b, 6), "weights": [round(float(v), 6) for v in w]}) + "\n")
    _probe.cache_clear()
    print(f"# request probe: out-of-fold accuracy {float(((unseen > 0) == (y == 1)).mean()):.3f} on {len(y)} messages")
    return {(row[0], row[1]): float(np.clip(u, -PROBE_CLIP, PROBE_CLIP)) for row, u in zip(rows, unseen)}


def _normalised(weight: np.ndarray) -> np.ndarray:
    return weight * len(weight) / weight.sum()


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = L2):
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


def _probabilities(x, coefficients, bias):
    return 1 / (1 + np.exp(-(x @ coefficients + bias)))


def cascade_band(p, y, right, margin, talk, budget_share=None):
    """The widest band of the cheap gate where it decides alone with at most MAX_CASCADE_ERRORS of
    the dev items decided wrongly by it (no tool below `low`; a tool, ranked right, above `high`
    with `margin`). The rest goes to e5."""
    budget = (MAX_CASCADE_ERRORS if budget_share is None else budget_share) * len(y)
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
                    best = (float(low), float(high), m, settled)
    return best


def main():
    probe = request_probe()
    xs, cheap, ys, weights, rights, margins, talks = [], [], [], [], [], [], []
    for dataset, catalog in DEV:
        x, xc, y, right, margin, talk = features(dataset, catalog, probe)
        y = np.array(y, dtype=float)
        # Balanced within each set (tool vs none), and each set counts as much as the other.
        per_class = np.where(y == 1, 0.5 / y.sum(), 0.5 / (len(y) - y.sum()))
        xs.append(np.array(x)), cheap.append(np.array(xc)), ys.append(y), weights.append(per_class)
        rights.append(np.array(right)), margins.append(np.array(margin)), talks.append(np.array(talk))
    x, xc, y, weight = np.vstack(xs), np.vstack(cheap), np.concatenate(ys), np.concatenate(weights)
    coefficients, bias = fit(x, y, _normalised(weight))
    print("GATE_COEFFICIENTS = (" + ", ".join(f"{c:.4f}" for c in coefficients) + ")")
    print(f"GATE_BIAS = {bias:.4f}")
    cheap_coefficients, cheap_bias = fit(xc, y, _normalised(weight))
    print("CHEAP_COEFFICIENTS = (" + ", ".join(f"{c:.4f}" for c in cheap_coefficients) + ")")
    print(f"CHEAP_BIAS = {cheap_bias:.4f}")
    p = _probabilities(xc, cheap_coefficients, cheap_bias)
    low, high, margin, settled = cascade_band(p, y, np.concatenate(rights), np.concatenate(margins),
                                              np.concatenate(talks))
    print(f"CASCADE_LOW, CASCADE_HIGH, CASCADE_MARGIN = {low:.2f}, {high:.2f}, {margin}")
    print(f"# settled without e5: {settled} of {len(y)} dev messages")
    for share in (0.005, 0.015, 0.02, 0.03):  # the trade-off, for the record
        *band, settled = cascade_band(p, y, np.concatenate(rights), np.concatenate(margins), np.concatenate(talks), share)
        print(f"# with {share:.1%} errors allowed: band {band}, {settled} of {len(y)} settled")


if __name__ == "__main__":
    main()
