"""R6: the cost of the cheap check per message, and of each of its parts, on a routing dataset.

    python bench/routing_check.py [DATASET.jsonl] [--catalog CATALOG.json] [--rounds 3]

No database and no model call: the check is pure over the catalog index. Printed: the seconds to
load both encoders and to build the index (once per catalog version per process), then the
median milliseconds per message of, in the same run and interleaved item by item so both see
the same load: `check` (everything), the USE encoding alone and the e5 encoding alone of the
message. Their ratio tells the share of the second encoder in the check. The load average is
printed beside the figures: this machine is shared, wall clock is noisy.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.routing import encoder  # noqa: E402
from runtime.routing.candidates import catalog_index  # noqa: E402
from runtime.routing.evaluation import load_catalog, load_dataset  # noqa: E402
from runtime.routing.gate import check  # noqa: E402


def _ms(action) -> float:
    started = time.perf_counter()
    action()
    return 1000 * (time.perf_counter() - started)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", default=str(ROOT / "datasets/asixto_soporte_dev.jsonl"))
    parser.add_argument("--catalog", default=str(ROOT / "datasets/asixto_soporte_catalog.json"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cards = load_catalog(Path(args.catalog).read_text(encoding="utf-8"))
    with open(args.dataset, encoding="utf-8") as handle:
        items = load_dataset(handle, {card.name for card in cards})
    loads = _ms(lambda: (encoder.embed(["hola"]), encoder.embed_e5(["hola"], query=True)))
    building = _ms(lambda: catalog_index(cards))
    index = catalog_index(cards)
    check(index, items[0]["messages"])  # the small-talk phrases are embedded on the first check
    times = {"check": [], "use": [], "e5": []}
    for _round in range(args.rounds):
        for item in items:
            text = item["messages"][-1]["content"]
            times["check"].append(_ms(lambda: check(index, item["messages"])))
            times["use"].append(_ms(lambda: encoder.embed([text])))
            times["e5"].append(_ms(lambda: encoder.embed_e5([text], query=True)))
    median = {name: statistics.median(values) for name, values in times.items()}
    with open("/proc/loadavg") as handle:
        load = " ".join(handle.read().split()[:3])
    print(f"{len(items)} messages × {args.rounds} rounds, {len(cards)} tools; load average {load}")
    print(f"encoders loaded in {loads / 1000:.2f} s, index built in {building / 1000:.2f} s")
    print(f"median ms per message: check {median['check']:.1f}, USE encoding {median['use']:.1f}, "
          f"e5 encoding {median['e5']:.1f}; e5 / check = {median['e5'] / median['check']:.2f}")


if __name__ == "__main__":
    main()
