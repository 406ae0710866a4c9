"""Fit the cheap check's learned parts (runtime/routing/gate.py) on development domains only, and measure
them the honest way: leave one domain out.

    python datasets/fit_gate.py --lodo [--examples] [--only DOMAIN …]   # figures of every domain, fitted without it
    python datasets/fit_gate.py --write                                  # fit on every dev domain, write the probes,
                                                                         # print the gate's constants for gate.py

A *domain* is one business: its catalog and its items. The development domains are the support desk
(`asixto_soporte_dev*.jsonl` with the spent `_heldout3` and `_heldout5`, read against its own 15-tool catalog
and against the example server's 3 thin tools), the BFCL dev half (with its `_extra` file), and every folder
of `datasets/domains/` (`catalog.json`, `items.jsonl`, `examples.jsonl`: written by helpers who saw only a
catalog and the format). The spent held-out domains (`datasets/heldout_domains/` to
`heldout_domains4/`: each run once, its figures recorded in the README) are measured too, each left out in turn, and
fitted on only with `--set SPENT=fit` (`SPENT`).

What is fitted, each on the domains it is given (each domain weighs the same, its classes alike):
- the request probe (`request_probe.json`): log-odds that a message asks a desk for something, a logistic
  regression over its USE vector, on stand-alone messages (a follow-up's label is its conversation's);
- the action probe (`action_probe.json`): log-odds that a request asks to change something rather than to
  know, over its USE vector, on stand-alone messages that expect a tool, labelled by the tool's level;
- the request probe over both encoders (`request_probe_full.json`, FULL_PROBES): the same over the USE and e5
  vectors side by side, which the full gate reads (a message e5 was read for);
- the gate and the cheap gate (logistic regressions over `gate.gate_features` / `gate.cheap_features`, the
  request probe's feature out of fold by domain), and the cascade band.

`--lodo` fits all of it without each domain in turn and runs `evaluation.evaluate` (the check as a turn runs
it) on the left-out one; `--examples` adds a run with the domain's `examples.jsonl`. A change goes in only if
the left-out figures say so.
"""

import argparse
import ast
import contextlib
import importlib
import itertools
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

from runtime.routing import action, encoder, gate  # noqa: E402
from runtime.routing.candidates import catalog_index  # noqa: E402
from runtime.routing.evaluation import evaluate, load_catalog, load_dataset, load_examples  # noqa: E402
from runtime.routing.words import normalise  # noqa: E402

DATA = ROOT / "datasets"
SUPPORT = ("asixto_soporte_dev.jsonl asixto_soporte_dev_extra.jsonl asixto_soporte_dev_extra2.jsonl "
           "asixto_soporte_heldout3.jsonl asixto_soporte_heldout5.jsonl")
L2, NEWTON_STEPS = 10.0, 50
PROBE_L2 = 10.0  # the probes' penalty (512 inputs)
ACTION_L2 = 1.0  # the action combination's penalty (a few inputs)
MAX_CASCADE_ERRORS = 0.02  # share of dev items the cheap gate may decide wrongly on its own
FIT_RANKER = True
# Stand-alone messages of other businesses, labelled without a catalog (`probe_corpus/*.jsonl`: does it need the
# company's systems, and does it ask to change something), added to the probes' fits: "business" weighs each of
# their businesses as a domain, "one" all of them as one domain, "off" leaves them out.
CORPUS = "off"
# The probes of a message read with e5 (the full gate's and the full score's) read its USE and e5 vectors side by side
# (`request_probe_full.json`, `action_probe_full.json`): "both", "request" (the action probe reads USE alone), or
# "off" (the USE probes read every message).
FULL_PROBES = "request"
# The spent held-out domains (`heldout_domains/` to `heldout_domains4/`: run once each, figures recorded, spent):
# "off" leaves them out, "eval" leaves each out in turn (figures of a fit without any of them), "fit" makes them
# development domains (fitted on, and each left out in turn like the others).
SPENT = "eval"
SPENT_FOLDERS = ("heldout_domains", "heldout_domains2", "heldout_domains3", "heldout_domains4")
# Top-1/top-2 score margins the cascade band may ask for (scores are in the fitted weights' units: tens)
MARGINS = (0.5, 1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0)  # fit the score's weights (else keep gate.py's)


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
    spent: bool = False  # a spent held-out domain (SPENT)


def dev_domains() -> list[Domain]:
    found = [Domain("support", [Part("asixto_soporte_catalog.json", SUPPORT.split()), Part("examples.soporte", SUPPORT.split())]),
             Domain("bfcl", [Part("bfcl_sgd_catalog.json", ["bfcl_sgd_dev.jsonl", "bfcl_sgd_dev_extra.jsonl"])])]
    for top in ("domains", *(SPENT_FOLDERS if SPENT != "off" else ())):
        for folder in sorted((DATA / top).iterdir()) if (DATA / top).is_dir() else []:
            if (folder / "catalog.json").exists() and (folder / "items.jsonl").exists():
                where = f"{top}/{folder.name}"
                examples = f"{where}/examples.jsonl" if (folder / "examples.jsonl").exists() else None
                found.append(Domain(folder.name, [Part(f"{where}/catalog.json", [f"{where}/items.jsonl"], examples)],
                                    spent=top != "domains"))
    return found


def fitted_on(domains: list[Domain]) -> list[Domain]:
    """The domains a fit reads: the spent held-out ones only when SPENT is "fit"."""
    return [d for d in domains if SPENT == "fit" or not d.spent]


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
    expected: int | None  # the expected tool's place in its catalog
    part: str  # its catalog (the ranker compares the tools of one catalog)
    text: str  # the message as written
    e5: np.ndarray | None = None  # its e5 vector (as a query)

    @property
    def both(self) -> np.ndarray:
        """USE and e5 side by side: what the full probes read."""
        return np.concatenate([self.use, self.e5])


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
        e5s = encoder.embed_e5([normalise(t) or t for t in texts], query=True)
        for item, reading, use, e5 in zip(items, readings, uses, e5s):
            if reading is None:
                continue
            top = index.cards[int(np.argmax(gate.cheap_scores(reading.signals)))].name
            position = [card.name for card in cards].index(item["expected"]) if item["expected"] else None
            rows.append(Row(domain.name, reading, use, item["expected"] is not None,
                            levels.get(item["expected"]), len(item["messages"]) == 1, top == item["expected"],
                            position, f"{domain.name}:{part.catalog}", item["messages"][-1]["content"], e5))
    _rows_cache[domain.name] = rows
    return rows


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = L2, start=None):
    """Weighted logistic regression with an L2 penalty on standardised features (Newton's method: the same
    optimum as gradient descent, in a few steps); coefficients and bias for the raw features. `start`: a fit of
    nearly the same rows (coefficients, bias) to start from (the same optimum, in fewer steps)."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = np.hstack([(x - mean) / scale, np.ones((len(y), 1))])
    penalty = np.full(z.shape[1], l2 / len(y))
    penalty[-1] = 0.0  # the bias is not penalised
    w = np.zeros(z.shape[1])
    if start is not None:
        w[:-1], w[-1] = start[0] * scale, start[1] + float(start[0] @ mean)
    total = weight.sum()
    for _ in range(NEWTON_STEPS):
        p = 1 / (1 + np.exp(-np.clip(z @ w, -30, 30)))
        gradient = z.T @ ((p - y) * weight) / total + penalty * w
        hessian = (z * (weight * p * (1 - p))[:, None]).T @ z / total + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-7:
            break
    coefficients = w[:-1] / scale
    return coefficients, float(w[-1] - (w[:-1] * mean / scale).sum())


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


@dataclass
class CorpusRow:
    """A message of the probe corpus: what the probes read of a row."""

    domain: str
    use: np.ndarray
    needs_tool: bool
    acts: bool | None
    alone: bool = True


_corpus_cache: dict = {}


def corpus_rows() -> list[CorpusRow]:
    if CORPUS == "off":
        return []
    if "rows" not in _corpus_cache:
        lines = [json.loads(line) for path in sorted((DATA / "probe_corpus").glob("*.jsonl"))
                 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        uses = encoder.embed([normalise(line["text"]) or line["text"] for line in lines])
        _corpus_cache["rows"] = [(line, use) for line, use in zip(lines, uses)]
    return [CorpusRow(f"corpus:{line['business']}" if CORPUS == "business" else "corpus", use, bool(line["system"]),
                      line["acts"] if line["system"] else None) for line, use in _corpus_cache["rows"]]


def fit_probe(rows: list[Row], label, *, full: bool = False, start=None) -> tuple[np.ndarray, float]:
    """A probe over the USE vectors of `rows`' stand-alone messages (`full`: USE and e5; the corpus has no e5)."""
    rows = rows + ([] if full else corpus_rows())
    chosen = [(r, label(r)) for r in rows if r.alone and label(r) is not None]
    x = np.array([r.both if full else r.use for r, _l in chosen])
    y = np.array([float(l) for _r, l in chosen])
    return fit(x, y, balanced([r.domain for r, _l in chosen], y), PROBE_L2, start)


def _request_label(row: Row):
    return row.needs_tool


def _action_label(row: Row):
    return row.acts


def log_odds(probe, use: np.ndarray) -> float:
    w, b = probe
    return float(np.clip(use @ w + b, -gate.PROBE_CLIP, gate.PROBE_CLIP))


def out_of_fold(rows: list[Row], domains: list[Domain], label, full: bool, start) -> dict:
    """Each row's probe log-odds from a probe fitted without its domain (starting from `start`, the probe of all)."""
    found = {}
    for domain in domains:
        others = [r for r in rows if r.domain != domain.name]
        probe = fit_probe(others, label, full=full, start=start)
        found.update({id(r): log_odds(probe, r.both if full else r.use) for r in rows if r.domain == domain.name})
    return found


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
            for m in MARGINS:
                yes = (p >= high) & (margin >= m) & ~no & ~talk
                errors = errors_low + int((yes & ((y == 0) | ~right)).sum())
                settled = int((no | yes | talk).sum())
                if errors <= budget and settled > best[3]:
                    best = (round(float(low), 2), round(float(high), 2), m, settled)
    return best


RANK_L2, RANK_STEPS, RANK_RATE = 0.01, 600, 0.5


def fit_ranker(rows: list[Row], readings: list, *, full: bool) -> tuple[float, ...]:
    """The score's weights: a conditional logit (softmax over each catalog's tools) on the stand-alone requests,
    each domain weighing the same. Only the weights' scale and direction matter, so columns are scaled, not centred."""
    groups = {}
    for row, reading in zip(rows, readings):
        if row.alone and row.expected is not None:
            groups.setdefault(row.part, []).append((row, gate.rank_features(reading.signals, full=full)))
    domain_count = {}
    for part, found in groups.items():
        domain_count[found[0][0].domain] = domain_count.get(found[0][0].domain, 0) + len(found)
    stacked = [(np.stack([f for _r, f in found]), np.array([r.expected for r, _f in found]),
                np.array([1.0 / domain_count[r.domain] for r, _f in found])) for found in groups.values()]
    scale = np.concatenate([x.reshape(-1, x.shape[-1]) for x, _y, _w in stacked]).std(axis=0) + 1e-6
    total = sum(w.sum() for _x, _y, w in stacked)
    w = np.zeros(len(scale))
    for _ in range(RANK_STEPS):
        gradient = RANK_L2 * w
        for x, y, weight in stacked:
            z = x / scale  # (items, tools, features)
            logits = z @ w
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            expected = (p[:, :, None] * z).sum(axis=1) - z[np.arange(len(y)), y]
            gradient += (weight[:, None] * expected).sum(axis=0) / total
        w -= RANK_RATE * gradient
    return tuple(round(float(v), 4) for v in w / scale)


@dataclass
class Fitted:
    request: tuple
    action: tuple
    request_full: tuple | None
    action_full: tuple | None
    gate: tuple
    cheap: tuple
    band: tuple
    cheap_weights: tuple = ()
    full_weights: tuple = ()
    combination: tuple = ()  # action.ACTION_COEFFICIENTS, ACTION_BIAS


def fit_all(domains: list[Domain]) -> Fitted:
    rows = [row for domain in domains for row in rows_of(domain)]
    request, action_probe = fit_probe(rows, _request_label), fit_probe(rows, _action_label)
    full_probes = (fit_probe(rows, _request_label, full=True) if FULL_PROBES != "off" else None,
                   fit_probe(rows, _action_label, full=True) if FULL_PROBES == "both" else None)
    # The probes' features out of fold (by domain): the gate and the combination learn what a probe says of unseen
    # words. A cheap reading has the USE probes' values; a full one (e5 read) the full probes' when they are on.
    unseen = out_of_fold(rows, domains, _request_label, False, request)
    action_unseen = out_of_fold(rows, domains, _action_label, False, action_probe)
    unseen_full = out_of_fold(rows, domains, _request_label, True, full_probes[0]) if full_probes[0] else unseen
    action_unseen_full = out_of_fold(rows, domains, _action_label, True, full_probes[1]) if full_probes[1] else action_unseen
    # The combination with the grammar of the request, fitted on the full readings' probe values (the gates that
    # decide close calls read e5); a cheap reading applies it to its USE probe's value.
    grammar_full = {id(r): action.features(r.text, r.reading.plain, action_unseen_full[id(r)]) for r in rows}
    grammar_cheap = {id(r): action.features(r.text, r.reading.plain, action_unseen[id(r)]) for r in rows}
    chosen = [r for r in rows if r.alone and r.acts is not None]
    y_acts = np.array([float(r.acts) for r in chosen])
    combination = fit(np.array([grammar_full[id(r)] for r in chosen]), y_acts,
                      balanced([r.domain for r in chosen], y_acts), ACTION_L2)

    def combined(features):
        return {key: float(np.clip(combination[1] + np.dot(combination[0], f), -30, 30)) for key, f in features.items()}

    acts_full, acts_cheap = combined(grammar_full), combined(grammar_cheap)
    readings = [_with_probes(r, unseen_full[id(r)], acts_full[id(r)]) for r in rows]
    cheap_readings = [_with_probes(r, unseen[id(r)], acts_cheap[id(r)]) for r in rows]
    right = np.mean([(acts_full[id(r)] > 0) == r.acts for r in chosen])
    right_cheap = np.mean([(acts_cheap[id(r)] > 0) == r.acts for r in chosen])
    probe_right = np.mean([(action_unseen_full[id(r)] > 0) == r.acts for r in chosen])
    print(f"# acts, out of fold: probe alone {probe_right:.3f}, with the grammar {right:.3f} (USE probe: {right_cheap:.3f})"
          f" on {len(chosen)} requests", file=sys.stderr)
    weights = (fit_ranker(rows, cheap_readings, full=False), fit_ranker(rows, readings, full=True)) if FIT_RANKER else (
        gate.CHEAP_WEIGHTS, gate.FULL_WEIGHTS)
    gate.CHEAP_WEIGHTS, gate.FULL_WEIGHTS = weights  # the gate's features read the scores
    readings = [_with_probes(r, reading.request, reading.signals.acts) for r, reading in zip(rows, readings)]
    cheap_readings = [_with_probes(r, reading.request, reading.signals.acts) for r, reading in zip(rows, cheap_readings)]
    y = np.array([float(r.needs_tool) for r in rows])
    weight = balanced([r.domain for r in rows], y)
    full = fit(np.array([gate.gate_features(r) for r in readings]), y, weight)
    xc = np.array([gate.cheap_features(r) for r in cheap_readings])
    cheap = fit(xc, y, weight)
    p = 1 / (1 + np.exp(-(xc @ cheap[0] + cheap[1])))
    margins = np.array([gate._margin(gate.cheap_scores(r.signals)) for r in cheap_readings])
    band = cascade_band(p, y, np.array([r.top_right for r in rows]), margins,
                        np.array([r.is_small_talk for r in cheap_readings]))
    return Fitted(request, action_probe, *full_probes, full, cheap, band, *weights, combination)


def _probe_file(probe, files: list[str], full: bool = False) -> str:
    w, b = probe
    what = "USE vector then e5 vector (as a query)" if full else "USE vector"
    return json.dumps({"fitted_by": "datasets/fit_gate.py", "input": f"{what} of the normalised message",
                       "domains": files, "bias": round(float(b), 6), "weights": [round(float(v), 6) for v in w]}) + "\n"


def apply(fitted: Fitted, folder: Path, names: list[str]) -> None:
    """The check reads `fitted` from now on, in this process (the probes from files in `folder`)."""
    for owner, attribute, probe, filename in ((gate, "REQUEST_PROBE", fitted.request, "request"),
                                             (action, "ACTION_PROBE", fitted.action, "action")):
        path = folder / f"{filename}_probe.json"
        path.write_text(_probe_file(probe, names))
        setattr(owner, attribute, path)
    for owner, attribute, probe, filename in ((gate, "REQUEST_PROBE_FULL", fitted.request_full, "request"),
                                             (action, "ACTION_PROBE_FULL", fitted.action_full, "action")):
        path = folder / f"{filename}_probe_full.json"  # not written when off: the USE probes read every message
        if probe is not None:
            path.write_text(_probe_file(probe, names, full=True))
        setattr(owner, attribute, path)
    action._load.cache_clear()
    action.ACTION_COEFFICIENTS = tuple(float(c) for c in fitted.combination[0])
    action.ACTION_BIAS = float(fitted.combination[1])
    gate.GATE_COEFFICIENTS, gate.GATE_BIAS = tuple(float(c) for c in fitted.gate[0]), float(fitted.gate[1])
    gate.CHEAP_COEFFICIENTS, gate.CHEAP_BIAS = tuple(float(c) for c in fitted.cheap[0]), float(fitted.cheap[1])
    gate.CASCADE_LOW, gate.CASCADE_HIGH, gate.CASCADE_MARGIN = fitted.band[:3]
    gate.CHEAP_WEIGHTS, gate.FULL_WEIGHTS = fitted.cheap_weights, fitted.full_weights


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


_fits: dict = {}


def lodo(domains: list[Domain], options, settings: list[dict]) -> None:
    """Each left-out domain's figures, fitted without it, for each setting of gate constants that the fit does
    not read (the guard's and the examples' constants): one fit per fold, the check's readings memoised."""
    tables = [{} for _setting in settings]
    for left in domains:
        if options.only and left.name not in options.only:
            continue
        others = fitted_on([d for d in domains if d.name != left.name])
        names = tuple(d.name for d in others)
        with tempfile.TemporaryDirectory() as folder:
            if names not in _fits:  # with SPENT "eval" every spent domain's fold is the same fit
                _fits[names] = fit_all(others)
            apply(_fits[names], Path(folder), list(names))
            memo = {}
            for table, setting in zip(tables, settings):
                for name, value in setting.items():
                    _set(name, value)
                # readings depend on the examples' constants (scores); the guard's are read after them
                key = tuple((n, v) for n, v in setting.items() if n.startswith(("EXAMPLE", "TAUGHT")) or n == "W_EXAMPLE")
                with _memoised_reads(memo.setdefault(key, {})):
                    if not options.examples_only:
                        table[left.name] = evaluate_domain(left, examples=False)
                    if options.examples or options.examples_only:
                        table[left.name + "+examples"] = evaluate_domain(left, examples=True)
    for table, setting in zip(tables, settings):
        _print_table(table, setting, options)


def _set(name: str, value: str) -> None:
    """A constant of the check ("GATE_THRESHOLD", "guard.READ_MARGIN") or of this script ("FIT_RANKER") set from text."""
    module_name, _dot, name = name.rpartition(".")
    owner = importlib.import_module(f"runtime.routing.{module_name}") if module_name else (
        gate if hasattr(gate, name) else sys.modules[__name__])
    current = getattr(owner, name)  # AttributeError: no such constant
    setattr(owner, name, value == "True" if isinstance(current, bool) else
            ast.literal_eval(value) if isinstance(current, tuple) else type(current)(value))


@contextlib.contextmanager
def _memoised_reads(memo: dict):
    """`gate.read` remembers what it read (same index, texts, cascade) in `memo`, for one fit and one setting of
    the constants a reading depends on."""
    original = gate.read

    def read(index, texts, *, cascade=True):
        key = (id(index), tuple(texts), cascade)
        if key not in memo:
            memo[key] = (index, original(index, texts, cascade=cascade))
        return list(memo[key][1])

    gate.read = read
    try:
        yield
    finally:
        gate.read = original


def _print_table(table: dict, setting: dict, options) -> None:
    print(f"## {setting or 'as shipped'}")
    for name, figures in table.items():
        print(f"{name:<22} n={figures['n']:<4} gate={figures['gate_accuracy']:<6} top1={figures['top1']:<6} "
              f"recall@3={figures['recall_at_3']:<6} harmful={figures['harmful_routes']} ({figures['harmful_share']}) "
              f"ms median {figures['ms_median']}, p90 {figures['ms_p90']}")
        if options.misses:
            for miss in figures["misses"]:
                print(f"    {miss}")
    spent = {d.name for d in dev_domains() if d.spent}
    for suffix in ("", "+examples"):
        for label, chosen in (("new domains", lambda n: n not in ("support", "bfcl") and n not in spent),
                              ("spent domains", lambda n: n in spent),
                              ("all business domains", lambda n: n not in ("support", "bfcl"))):
            new = [f for name, f in table.items() if chosen(name.split("+")[0])
                   and name.endswith(suffix) and ("+" in name) == bool(suffix)]
            if label != "new domains" and not any(name.split("+")[0] in spent for name in table):
                continue
            for key in ("gate_accuracy", "top1", "recall_at_3", "harmful_share"):
                values = [f[key] for f in new if f[key] is not None]
                if values:
                    worst = max(values) if key == "harmful_share" else min(values)
                    print(f"# {label}{suffix}' {key}: mean {np.mean(values):.3f}, worst {worst:.3f}")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lodo", action="store_true", help="leave-one-domain-out figures")
    parser.add_argument("--examples", action="store_true", help="also with each domain's examples.jsonl")
    parser.add_argument("--examples-only", action="store_true", help="only with each domain's examples.jsonl")
    parser.add_argument("--only", nargs="*", help="only these left-out domains")
    parser.add_argument("--misses", action="store_true", help="print the left-out domains' misses")
    parser.add_argument("--write", action="store_true", help="fit on every dev domain and write the probes")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="another value of a constant (GATE_THRESHOLD=0.5, guard.READ_MARGIN=3, module.NAME=…), set before any message is read")
    parser.add_argument("--grid", nargs="*", default=[], metavar="NAME=V1,V2",
                        help="--lodo for every combination of these values (rows read once)")
    options = parser.parse_args()
    for assignment in options.set:  # before any message is read: "guard.READ_MARGIN=3", "lexicon.X=…"
        try:
            _set(*assignment.split("=", 1))
        except AttributeError as exc:
            parser.error(str(exc))
    domains = dev_domains()
    if options.lodo:
        settings = [dict(pair.split("=", 1) for pair in combo) for combo in itertools.product(
            *[[f"{name}={value}" for value in values.split(",")] for name, values in
              (spec.split("=", 1) for spec in options.grid)])] if options.grid else [{}]
        lodo(domains, options, settings)
    if options.write:
        fitted = fit_all(fitted_on(domains))
        names = [d.name for d in fitted_on(domains)]
        (ROOT / "runtime/routing/request_probe.json").write_text(_probe_file(fitted.request, names))
        (ROOT / "runtime/routing/action_probe.json").write_text(_probe_file(fitted.action, names))
        for name, probe in (("request", fitted.request_full), ("action", fitted.action_full)):
            path = ROOT / f"runtime/routing/{name}_probe_full.json"
            if probe is not None:
                path.write_text(_probe_file(probe, names, full=True))
            else:
                path.unlink(missing_ok=True)
        print("GATE_COEFFICIENTS = (" + ", ".join(f"{c:.4f}" for c in fitted.gate[0]) + ")")
        print(f"GATE_BIAS = {fitted.gate[1]:.4f}")
        print("CHEAP_COEFFICIENTS = (" + ", ".join(f"{c:.4f}" for c in fitted.cheap[0]) + ")")
        print(f"CHEAP_BIAS = {fitted.cheap[1]:.4f}")
        print(f"CASCADE_LOW, CASCADE_HIGH, CASCADE_MARGIN = {fitted.band[0]:.2f}, {fitted.band[1]:.2f}, {fitted.band[2]}")
        print("ACTION_COEFFICIENTS = (" + ", ".join(f"{c:.4f}" for c in fitted.combination[0]) + ")")
        print(f"ACTION_BIAS = {fitted.combination[1]:.4f}")
        print(f"CHEAP_WEIGHTS = {fitted.cheap_weights}")
        print(f"FULL_WEIGHTS = {fitted.full_weights}")


if __name__ == "__main__":
    main()
