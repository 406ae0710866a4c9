"""R6, P4: the cost of the cheap check per message, with its cascade and without, on a routing dataset.

    python bench/routing_check.py [DATASET.jsonl] [--catalog CATALOG.json] [--rounds 3]

No database and no model call: the check is pure over the catalog index. Printed: the seconds to
load both encoders and to build the index (once per catalog version; in a worker, a task does it,
runtime/routing/index_store.py), then the median and p90 milliseconds per message, interleaved
item by item so all see the same load: `check` with the cascade (e5 only when the cheap signals
are unsure), `check` reading e5 for every message, and the USE and e5 encodings alone. Also the
share of messages the cascade sent to e5. The encoders' cache is off (ASIXTO_ENCODING_CACHE=0 unless
set): every round encodes again, as a message never seen before is. The load average is printed beside the figures: this
machine is shared, wall clock is noisy; compare ratios within one run.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import django

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")  # the language detector reads the settings; no database
os.environ.setdefault("ASIXTO_ENCODING_CACHE", "0")
django.setup()

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
    check(index, items[0]["messages"], cascade=False)  # the small-talk phrases are embedded on the first check
    times = {"cascade": [], "full": [], "use": [], "e5": []}
    with_e5 = 0
    for _round in range(args.rounds):
        for item in items:
            text = item["messages"][-1]["content"]
            before = encoder.calls["e5"]
            times["cascade"].append(_ms(lambda: check(index, item["messages"])))
            with_e5 += encoder.calls["e5"] > before
            times["full"].append(_ms(lambda: check(index, item["messages"], cascade=False)))
            times["use"].append(_ms(lambda: encoder.embed([text])))
            times["e5"].append(_ms(lambda: encoder.embed_e5([text], query=True)))
    median = {name: statistics.median(values) for name, values in times.items()}
    p90 = {name: sorted(values)[int(0.9 * (len(values) - 1))] for name, values in times.items()}
    with open("/proc/loadavg") as handle:
        load = " ".join(handle.read().split()[:3])
    print(f"{len(items)} messages × {args.rounds} rounds, {len(cards)} tools; load average {load}")
    print(f"encoders loaded in {loads / 1000:.2f} s, index built in {building / 1000:.2f} s")
    print(f"check with the cascade: median {median['cascade']:.1f} ms, p90 {p90['cascade']:.1f} ms; "
          f"e5 read for {with_e5 / (len(items) * args.rounds):.0%} of messages")
    print(f"check reading e5 always: median {median['full']:.1f} ms, p90 {p90['full']:.1f} ms")
    print(f"encodings alone: USE median {median['use']:.1f} ms, e5 median {median['e5']:.1f} ms; "
          f"cascade / always = {median['cascade'] / median['full']:.2f}")


if __name__ == "__main__":
    main()
