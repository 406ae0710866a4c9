"""What a tenant's examples teach the ranking (R6, issue 18 item 4): a small classifier of this catalog's own,
fitted when the index is assembled.

A tenant that writes sample requests for its tools ("frases de ejemplo") or corrects a turn's routing gives the
check requests of its own tools in its customers' words. Compared one by one (the closest example, the "asks"
signal) they move little: a messy message is rarely close to any one short example. A softmax regression over
the message's vector, fitted on the catalog's own texts (each tool's views and the requests built from its verb)
and, weighing most, on the tenant's examples, learns which directions of the encoders tell this catalog's tools
apart. Its log-probability of each tool, times `gate.TAUGHT_WEIGHT`, is one more term of the score
(`gate.tool_scores`), only for a catalog with examples of its tools: without them it ranked no better than the
score (datasets/README.md).

Two classifiers: over USE alone (the cheap ranking) and over USE and e5 side by side (the full one). They rank;
the gate never reads them (`Signals.untaught`), as it was fitted without examples. Fitted by plain gradient
descent from zero, a fixed number of steps, in float32: the same examples give the same classifier in every process
of a machine (another CPU may round a last digit differently, as the encoders themselves do).
"""

from dataclasses import dataclass

import numpy as np

# Chosen by leaving one domain out (datasets/README.md): the penalty, the examples' share of their tool's weight in
# the fit (against its own texts: each example weighed 30 times a text, with 3 examples a tool and about 13 texts),
# and the weight of the log-probability in the score (`gate.TAUGHT_WEIGHT`).
L2 = 0.01
EXAMPLE_SHARE = 0.87
STEPS, STEP_SIZE = 300, 0.5
# The fit costs tools × texts per step (both classifiers, one thread of this machine: 18 tools 0.15 s, 40 tools
# 0.5 s, 80 tools 1.6 s), once per process and version of the catalog and its examples, on the first turn that
# needs the index: a catalog larger than this ranks by its examples' closeness alone.
MAX_TOOLS = 50


@dataclass(frozen=True)
class Classifier:
    weights: np.ndarray  # (dimensions, tools)
    bias: np.ndarray  # (tools,)

    def log_probabilities(self, vector: np.ndarray) -> np.ndarray:
        """Per tool, log P(tool | message), for one message's vector (float32)."""
        z = vector.astype(np.float32) @ self.weights + self.bias
        z -= z.max()
        return z - np.log(np.exp(z).sum())


def fit(rows: np.ndarray, owners: np.ndarray, weights: np.ndarray, tools: int) -> Classifier:
    """A softmax regression of `owners` (each row's tool) on `rows`, each row weighing its `weights`."""
    x = rows.astype(np.float32)
    share = (weights / weights.sum()).astype(np.float32)
    target = np.eye(tools, dtype=np.float32)[owners]
    coefficients, bias = np.zeros((x.shape[1], tools), np.float32), np.zeros(tools, np.float32)
    for _step in range(STEPS):
        z = x @ coefficients + bias
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        gradient = (p - target) * share[:, None]
        coefficients -= STEP_SIZE * (x.T @ gradient + L2 * coefficients)
        bias -= STEP_SIZE * gradient.sum(axis=0)
    return Classifier(coefficients, bias)


def classifiers(index) -> tuple[Classifier | None, Classifier | None]:
    """The cheap (USE) and full (USE and e5) classifiers of a catalog, from its index's arrays
    (`candidates.CatalogIndex`); (None, None) when no example names one of its tools, or the catalog is too
    large to fit one on the turn path."""
    about, about_e5, asks_owner = index.about, index.about_e5, index.asks_owner
    tools = len(about)
    taught = index.examples_owner >= 0
    if not taught.any() or tools < 2 or tools > MAX_TOOLS:
        return None, None
    views = about.shape[1]
    owners = np.concatenate([np.repeat(np.arange(tools), views), asks_owner, index.examples_owner[taught]])
    example = np.arange(len(owners)) >= tools * views + len(asks_owner)
    use = np.concatenate([about.reshape(-1, about.shape[2]), index.asks, index.examples_use[taught]])
    e5 = np.concatenate([about_e5.reshape(-1, about_e5.shape[2]), index.asks_e5, index.examples_e5[taught]])
    weights = _weights(owners, example, tools)
    return fit(use, owners, weights, tools), fit(np.hstack([use, e5]), owners, weights, tools)


def _weights(owners: np.ndarray, example: np.ndarray, tools: int) -> np.ndarray:
    """Each tool weighs the same in the fit, so a tool with examples is not favoured over one without; within a
    tool with examples they weigh EXAMPLE_SHARE, its own texts the rest."""
    texts = np.bincount(owners[~example], minlength=tools).astype(np.float64)
    examples = np.bincount(owners[example], minlength=tools).astype(np.float64)
    text_share = np.where(examples > 0, 1 - EXAMPLE_SHARE, 1.0)
    return np.where(example, EXAMPLE_SHARE / np.maximum(examples[owners], 1), text_share[owners] / np.maximum(texts[owners], 1))
