"""The shared cache and the broker hold data, never code (issue 19, H1): a pickle planted in
Redis, where a stdio server that reached it wrote one into another tenant's key, is never
deserialized by a platform process."""

import os
import pickle

import pytest
from django.core.cache import cache
from django_tenants.utils import schema_context
from kombu.exceptions import ContentDisallowed
from kombu.serialization import dumps as kombu_dumps
from kombu.serialization import loads as kombu_loads

from asixto.celery import app


class Planted:
    """What an attacker writes: unpickling it runs `os.mkdir(path)`."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.fixture
def raw_redis():
    return cache._cache.get_client(write=True)


def test_a_pickle_planted_in_a_tenants_key_reads_as_a_miss_and_runs_nothing(raw_redis, tmp_path):
    """Issue 19 H1: the key a sign-in reads (the tenant's prefix, as django-tenants makes it)
    holds a pickle; reading it runs no code and gives None, and the value is then replaced."""
    marker = tmp_path / "ran"
    with schema_context("beta"):
        key = cache.make_and_validate_key("axes-planted")
        raw_redis.set(key, pickle.dumps(Planted(str(marker))))
        try:
            assert cache.get("axes-planted") is None
            assert cache.get_many(["axes-planted"]) in ({}, {"axes-planted": None})
            assert not marker.exists()
            cache.set("axes-planted", 3)
            assert cache.incr("axes-planted") == 4
        finally:
            cache.delete("axes-planted")


@pytest.mark.parametrize("value", [0, -7, 2**40, "texto ñ", "123", b"\x00raw\xff", {"a": [1, 2.5, None, True]}, [], None, 1.5])
def test_values_come_back_as_they_went_in(value):
    """Issue 19: what the platform stores (counters, bytes, JSON data) survives the serializer."""
    cache.set("asixto-test-value", value)
    try:
        assert cache.get("asixto-test-value", "absent") == value
    finally:
        cache.delete("asixto-test-value")


def test_the_broker_and_result_store_refuse_pickled_messages():
    """Issue 19 H1: a pickled task message or result is refused before it is deserialized."""
    content_type, encoding, payload = kombu_dumps(Planted("/nonexistent/never"), serializer="pickle")
    for accept in (app.conf.accept_content, app.conf.result_accept_content):
        with pytest.raises(ContentDisallowed):
            kombu_loads(payload, content_type, encoding, accept=accept)
