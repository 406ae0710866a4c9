"""These tests sign in with wrong and old passwords on purpose: forget axes' failure counters
after each one (they live in Redis, outside the rolled-back transaction), so that no later test
finds its user locked out."""

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _forget_sign_in_failures():
    yield
    client = cache._cache.get_client(write=True)
    for key in client.scan_iter(match="*axes-*"):
        client.delete(key)
