"""`manage.py routing_eval DATASET.jsonl --catalog CATALOG.json [--examples EXAMPLES.jsonl] [--json]`: the
cheap check (R6) measured on a labelled dataset, optionally with a tenant's examples (see
runtime/routing/evaluation.py for the three formats). A bad line of any file stops it before anything
is evaluated."""

import json
import time

from django.core.management.base import BaseCommand, CommandError

from runtime.routing.evaluation import DatasetError, evaluate, load_catalog, load_dataset, load_examples


class Command(BaseCommand):
    help = "Measure the routing gate and candidates on a labelled dataset (R6)."

    def add_arguments(self, parser):
        parser.add_argument("dataset", help="JSON lines: id, messages, expected (tool name or null), lang, style")
        parser.add_argument("--catalog", required=True, help="JSON list of MCP tool definitions")
        parser.add_argument("--examples", help='JSON lines {"tool": name or null, "text": …}: the tenant\'s examples')
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--misses", action="store_true", help="list the items decided wrongly")

    def handle(self, *args, dataset, catalog, examples=None, json: bool = False, misses: bool = False, **options):
        try:
            with open(catalog, encoding="utf-8") as handle:
                cards = load_catalog(handle.read())
            names = {card.name for card in cards}
            with open(dataset, encoding="utf-8") as handle:
                items = load_dataset(handle, names)
            taught = []
            if examples:
                with open(examples, encoding="utf-8") as handle:
                    taught = load_examples(handle, names)
        except OSError as exc:
            raise CommandError(f"{exc.filename}: {exc.strerror}") from exc
        except DatasetError as exc:
            raise CommandError(str(exc)) from exc
        if not items:
            raise CommandError("the dataset has no items")
        started = time.monotonic()
        report = evaluate(cards, items, taught)
        report["seconds"] = round(time.monotonic() - started, 2)
        if json:
            if not misses:
                report.pop("misses")
            self.stdout.write(_json(report))
            return
        self._print(report, misses)

    def _print(self, report, misses):
        write = self.stdout.write
        write(f"items: {report['n']} (expecting a tool: {report['tool_items']}), {report['seconds']} s "
              f"(index {report['index_seconds']} s, {report['ms_per_message']} ms per message)")
        write(f"gate accuracy: {report['gate_accuracy']}")
        c = report["confusion"]
        write("confusion (rows expected, columns decided):   tool   none")
        write(f"  tool                                        {c['tool']['tool']:>5}  {c['tool']['none']:>5}")
        write(f"  none                                        {c['none']['tool']:>5}  {c['none']['none']:>5}")
        write(f"candidates: top-1 {report['top1']}, recall@3 {report['recall_at_3']}, "
              f"routed (gate and top-1 right) {report['routed_accuracy']}")
        write(f"harmful routes (no tool or a read tool needed, a tool that acts routed): {report['harmful_routes']} "
              f"(share {report['harmful_share']}); tenant examples: {report['examples']}")
        for title, groups in (("by language", report["by_lang"]), ("by style", report["by_style"]),
                              ("follow-ups", {"all": report["follow_ups"]})):
            write(title + ":")
            for key, f in groups.items():
                write(f"  {key:<16} n={f['n']:<4} gate={f['gate_accuracy']}  top1={f['top1']}  "
                      f"recall@3={f['recall_at_3']}  harmful={f['harmful_routes']}")
        if misses:
            write("misses:")
            for miss in report["misses"]:
                mark = " HARMFUL" if miss["harmful"] else ""
                write(f"  {miss['id']}: expected {miss['expected']}, decided {miss['decided']}{mark} "
                      f"({miss['reason']}; {', '.join(miss['candidates'])})")


def _json(report):
    return json.dumps(report, ensure_ascii=False)
