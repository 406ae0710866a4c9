"""Fit the cheap check's gate (runtime/routing/gate.py) on the development halves only.

    python datasets/fit_gate.py

Reads `asixto_soporte_dev.jsonl` and `bfcl_sgd_dev.jsonl` (never a held-out file), computes the
gate's features of each item's last message with the code the check runs (`gate.read`,
`gate.gate_features`), fits a class-balanced logistic regression with a small L2 penalty on
standardised features (plain numpy gradient descent), and prints GATE_COEFFICIENTS and GATE_BIAS
for the raw features, to be pasted into gate.py. Each dev set weighs the same in the fit.

The support dev set is read twice: against its own 15-tool catalog, and against the 3 thin tools of
the example server (examples/soporte: fewer words per tool, so lower similarities), keeping there
only the items whose tool it has and the "none" items. A gate fitted on one catalog alone learns
how rich that catalog's descriptions are; two catalogs make it learn what a request looks like.
"""

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.routing.candidates import catalog_index  # noqa: E402
from runtime.routing.evaluation import load_catalog, load_dataset  # noqa: E402
from runtime.routing.gate import gate_features, read  # noqa: E402

DEV = [("asixto_soporte_dev.jsonl", "asixto_soporte_catalog.json"), ("bfcl_sgd_dev.jsonl", "bfcl_sgd_catalog.json"),
       ("asixto_soporte_dev.jsonl", "examples.soporte")]
L2, STEPS, RATE = 3.0, 4000, 0.1


def _cards(catalog: str):
    if catalog == "examples.soporte":
        from examples.soporte.definitions import ABRIR_CASO_SOPORTE, BUSCAR_PRODUCTO, CONSULTAR_CASO

        return load_catalog(json.dumps([ABRIR_CASO_SOPORTE, CONSULTAR_CASO, BUSCAR_PRODUCTO]))
    return load_catalog((ROOT / "datasets" / catalog).read_text())


def features(dataset: str, catalog: str):
    cards = _cards(catalog)
    names = {card.name for card in cards}
    with open(ROOT / "datasets" / dataset, encoding="utf-8") as handle:
        lines = [line for line in handle if json.loads(line).get("expected") in names | {None}]
    items = load_dataset(lines, names)
    index = catalog_index(cards)
    readings = read(index, [item["messages"][-1]["content"] for item in items])
    return ([gate_features(r) for r in readings], [item["expected"] is not None for item in items])


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray):
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = (x - mean) / scale
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        g = (p - y) * weight
        w -= RATE * (z.T @ g / weight.sum() + L2 * w / len(y))
        b -= RATE * g.sum() / weight.sum()
    coefficients = w / scale
    return coefficients, b - float((w * mean / scale).sum())


def main():
    xs, ys, weights = [], [], []
    for dataset, catalog in DEV:
        x, y = features(dataset, catalog)
        y = np.array(y, dtype=float)
        # Balanced within each set (tool vs none), and each set counts as much as the other.
        per_class = np.where(y == 1, 0.5 / y.sum(), 0.5 / (len(y) - y.sum()))
        xs.append(np.array(x)), ys.append(y), weights.append(per_class)
    x, y, weight = np.vstack(xs), np.concatenate(ys), np.concatenate(weights)
    coefficients, bias = fit(x, y, weight * len(y) / weight.sum())
    print("GATE_COEFFICIENTS = (" + ", ".join(f"{c:.4f}" for c in coefficients) + ")")
    print(f"GATE_BIAS = {bias:.4f}")


if __name__ == "__main__":
    main()
