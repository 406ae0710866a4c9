"""bench/routing_compare.py against the scripted stand-in (R6): the mechanics of running a
dataset through full turns with routing off and on, in its own database (CI use)."""

import json
import subprocess
import sys
from pathlib import Path

import psycopg
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def _admin_url():
    values = connection.settings_dict
    return psycopg.conninfo.make_conninfo(host=values["HOST"] or "127.0.0.1", port=values["PORT"] or 5432,
                                          user=values["USER"], password=values["PASSWORD"] or None, dbname="postgres")


def test_it_reports_the_correct_tool_rate_with_routing_off_and_on(tmp_path, db):
    """R6: routing off, the stand-in (which never calls a tool among many) is right only on the
    "none" item; routing on, the routed step shows one tool and the stand-in calls it."""
    dataset = tmp_path / "items.jsonl"
    dataset.write_text("\n".join(json.dumps(item, ensure_ascii=False) for item in [
        {"id": "a", "messages": [{"role": "user", "content": "Busco un router wifi 6, ¿cuánto cuesta?"}],
         "expected": "buscar_producto", "lang": "es"},
        {"id": "b", "messages": [{"role": "user", "content": "Gracias, eso era todo"}], "expected": None, "lang": "es"},
    ]), encoding="utf-8")
    # A bench drops only databases named as a bench's (bench/_django.py); this test database's own one
    database = f"asixto_bench_{connection.settings_dict['NAME']}_routing_compare"
    try:
        done = subprocess.run(
            [sys.executable, "bench/routing_compare.py", str(dataset), "--catalog", "datasets/asixto_soporte_catalog.json",
             "--json", "--database", database], cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        with psycopg.connect(_admin_url(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["n"] == 2 and figures["offered_tools"] > 0
    assert figures["routing_off"]["correct"] == 1 and figures["routing_off"]["misses"][0]["id"] == "a"
    assert figures["routing_on"]["correct"] == 2 and figures["routing_on"]["rate"] == 1.0
