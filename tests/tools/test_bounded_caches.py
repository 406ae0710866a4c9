"""The gateway's process caches forget their oldest entries one at a time (P1, issue 22): a worker
serving more tools than a cache holds keeps the rest warm instead of compiling everything again."""

from tools.bounded import BoundedDict
from tools.gateway import results


def test_it_drops_only_the_oldest_entry_past_its_limit():
    """P1: one more entry than the limit drops the first one set, and nothing else."""
    cache = BoundedDict(3)
    for n in range(4):
        cache[n] = str(n)
    assert list(cache) == [1, 2, 3]
    cache[2] = "again"  # replacing an entry grows nothing
    assert list(cache) == [1, 2, 3] and cache[2] == "again"


def test_compiled_validators_past_the_limit_keep_the_recent_ones():
    """P1, G5: a worker holds the validators of 10,000 tools (two each); past that, a validator
    compiled a moment ago is served again, not rebuilt (emptied whole when full, the cache kept only
    the newest one and compiled every tool's validators again and again)."""
    results._VALIDATORS.clear()
    try:
        schemas = [{"type": "object", "properties": {f"field_{n}": {"type": "string"}}} for n in range(20_001)]
        built = [results.compiled(schema, ("tool", n, "input")) for n, schema in enumerate(schemas)]
        assert len(results._VALIDATORS) == 20_000
        assert all(results.compiled(schemas[n], ("tool", n, "input")) is built[n] for n in range(19_001, 20_001))
    finally:
        results._VALIDATORS.clear()
