"""Routing on and off through full turns (R6): the correct-tool rate of each (the seed's experiment,
where routing took a self-hosted 35B model from 16% to 70% correct tool calls).

    python bench/routing_compare.py DATASET.jsonl --catalog CATALOG.json \
        [--endpoint URL --model NAME [--api-key KEY] [--router-endpoint URL --router-model NAME]] \
        [--limit N] [--json] [--database NAME]

Each item of the dataset (datasets/README.md: the last message is the customer's, `expected` is a
tool name or null) becomes a conversation in a tenant whose catalog is CATALOG, served by a real
MCP server on loopback (the SDK; every call answers {"ok": true}) and certified like any catalog. The
item runs as a full turn (`turn_execute`, in this process) twice: routing off, routing on. A turn
is correct when the first tool it called is the expected one, or when it called none and none
was expected. Only the tool choice is judged; arguments are not.

Without `--endpoint` it runs against a scripted stand-in (CI use, to prove the mechanics): as
router it picks the first candidate it is shown; shown exactly one tool it calls it, with
arguments filled from the schema; shown more it answers in prose — a model that does not call
tools on its own, so "off" scores only the "none" items and "on" scores the cheap check and the
router's pick. The figures mean something only with a real model behind `--endpoint`.

Its own database (asixto_bench_routing_compare, recreated) like the other benchmarks."""

import argparse
import json
import os
import re
import sys
import time
from contextlib import nullcontext

os.environ.setdefault("ASIXTO_ALLOW_PRIVATE_HOSTS", "1")  # the stand-ins are on loopback (M2)

from _django import ROOT, setup  # noqa: E402

OK_OUTPUT = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
OK_RESULT = [{"content": [{"type": "text", "text": '{"ok": true}'}], "structuredContent": {"ok": True}}]
_OPTION = re.compile(r"^- ([^:\s]+):", re.MULTILINE)


def stand_in_move(body: dict):
    """The scripted model's answer to one request (see the module docstring)."""
    from tests.support.model_server import call, say

    messages = body.get("messages") or []
    system = str(messages[0].get("content") or "") if messages else ""
    tools = body.get("tools") or []
    if not tools and system.startswith("You read a conversation"):  # the router call (R6)
        options = _OPTION.findall(system)
        request = str(messages[-1].get("content") or "")[-300:] or "?"
        return say(json.dumps({"tool": options[0] if options else "none", "request": request, "quantity": None,
                               "references": None, "details": {}, "clear": bool(options)}))
    if messages and messages[-1].get("role") == "tool":
        return say("Listo.")
    if len(tools) == 1:
        function = tools[0]["function"]
        return call(function["name"], _arguments(function.get("parameters") or {}, messages))
    return say("Con gusto te ayudo.")


def _arguments(schema: dict, messages: list[dict]) -> dict:
    text = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")[:100]
    values = {}
    for name in schema.get("required") or []:
        spec = (schema.get("properties") or {}).get(name) or {}
        if "enum" in spec:
            values[name] = spec["enum"][0]
        elif spec.get("type") in ("integer", "number"):
            values[name] = max(spec.get("minimum", 1), 1)
        elif spec.get("type") == "boolean":
            values[name] = True
        else:
            values[name] = text[: spec.get("maxLength", 100)] or "?"
    return values


def served_catalog(catalog: list[dict]):
    from tests.support.mutable_catalog import MutableCatalog

    # One output schema for all: every call answers {"ok": true}; only the choice of tool is judged.
    # Open input schemas (BFCL's) are closed so certification (C3) lets the tools be offered.
    tools = [{**tool, "outputSchema": OK_OUTPUT,
              "inputSchema": {"additionalProperties": False, **(tool.get("inputSchema") or {"type": "object"})}}
             for tool in catalog]
    server = MutableCatalog(tools)
    server.results = {tool["name"]: OK_RESULT for tool in tools}
    return server


def run_item(tenant, item: dict, routing: bool) -> tuple[str | None, float]:
    """One item as a full turn; returns the first tool called (without the server prefix) and seconds."""
    from django.test import override_settings
    from django_tenants.utils import tenant_context

    from runtime.models import Conversation, Message, Turn, TurnStep
    from runtime.turn import turn_execute

    with tenant_context(tenant):
        conversation = Conversation.objects.create(channel_kind="chat", language=item.get("lang") if item.get("lang") in ("es", "en") else "es")
        for message in item["messages"][:-1]:
            Message.objects.create(conversation=conversation, role="customer" if message["role"] == "user" else "agent",
                                   text=message["content"])
        last = Message.objects.create(conversation=conversation, role="customer", text=item["messages"][-1]["content"])
        turn = Turn.objects.create(conversation=conversation, message=last)
        started = time.perf_counter()
        with override_settings(ASIXTO_ROUTING=routing):
            turn_execute(turn_id=turn.pk)
        seconds = time.perf_counter() - started
        first = TurnStep.objects.filter(turn=turn, kind="tool").order_by("index").values_list("tool_name", flat=True).first()
    return (first.split("__", 1)[1] if first else None), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("--catalog", required=True)
    parser.add_argument("--endpoint", help="OpenAI-compatible base URL (…/v1); default: the scripted stand-in")
    parser.add_argument("--model", default="scripted")
    parser.add_argument("--api-key", default="")
    parser.add_argument("--router-endpoint")
    parser.add_argument("--router-model", default="")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--database", help="the database to recreate (default asixto_bench_routing_compare)")
    args = parser.parse_args()

    catalog = json.loads(open(args.catalog, encoding="utf-8").read())
    setup(args.database)
    from runtime.routing.evaluation import load_dataset

    with open(args.dataset, encoding="utf-8") as lines:
        items = load_dataset(lines, {tool["name"] for tool in catalog})
    items = items[: args.limit] if args.limit else items

    from tenants.services import tenant_create
    from tests.support.mcp_servers import serve_asgi
    from tests.support.model_server import ScriptedModel
    from tools.services import catalog_sync, server_create

    scripted = None if args.endpoint else ScriptedModel([stand_in_move])
    model_context = serve_asgi(scripted.app()) if scripted else nullcontext(None)
    server = served_catalog(catalog)
    with serve_asgi(server.app()) as mcp_url, model_context as model_url:
        from django.db import connection
        from django_tenants.utils import tenant_context

        tenant = tenant_create(slug="bench-routing", name="Bench").tenant
        tenant.model_base_url = args.endpoint or f"{model_url}/v1"
        tenant.model_name, tenant.model_api_key = args.model, args.api_key
        tenant.router_base_url = args.router_endpoint or ""
        tenant.router_model_name = args.router_model if args.router_endpoint else ""
        tenant.save()
        with tenant_context(tenant):
            version = catalog_sync(server=server_create(data={"slug": "bench", "transport": "streamable_http",
                                                             "url": f"{mcp_url}/mcp"}))
            from runtime.routing.index_store import build_live

            build_live()  # what the task queued by the sync does in a worker (no worker here)
            from runtime import selectors

            offered = len(selectors.offered_tools(channel="chat"))
            from tools.models import Finding

            blocked = sorted(set(Finding.objects.filter(severity="blocking").values_list("message_code", flat=True)))
            if blocked:
                print(f"not offered ({len(catalog) - offered} tools), blocking findings: {blocked[:5]}", file=sys.stderr)
        connection.set_schema_to_public()
        figures = {"n": len(items), "catalog_tools": len(catalog), "offered_tools": offered,
                   "model": "scripted stand-in" if scripted else args.endpoint}
        for routing in (False, True):
            correct, seconds, misses = 0, [], []
            for item in items:
                chosen, took = run_item(tenant, item, routing)
                seconds.append(took)
                if chosen == item["expected"]:
                    correct += 1
                else:
                    misses.append({"id": item["id"], "expected": item["expected"], "called": chosen})
            key = "routing_on" if routing else "routing_off"
            figures[key] = {"correct": correct, "rate": round(correct / len(items), 3) if items else 0.0,
                            "median_turn_seconds": round(sorted(seconds)[len(seconds) // 2], 3) if seconds else 0.0,
                            "misses": misses[:20]}
    del version
    if args.json:
        print(json.dumps(figures, ensure_ascii=False))
        return
    print(f"items: {figures['n']}   catalog tools offered: {offered}/{len(catalog)}   model: {figures['model']}")
    for key in ("routing_off", "routing_on"):
        row = figures[key]
        print(f"{key:12} correct tool: {row['correct']}/{figures['n']} = {row['rate']:.1%}   "
              f"median turn: {row['median_turn_seconds']:.3f} s")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
