"""The Redis broker transport (asixto/broker.py): messages still go round, and a channel keeps one
Redis client for its pool instead of building one per message and acknowledgement (P4)."""

import uuid

import pytest
from django.conf import settings
from kombu import Connection

from asixto.broker import Transport


def test_a_channel_reuses_its_client_and_still_delivers_and_acknowledges():
    """P4: the same client for every command while the pool stands; a new one with a new pool (as
    after a fork); a message sent is received, acknowledged, and gone."""
    assert settings.CELERY_BROKER_TRANSPORT == "asixto.broker:Transport"
    name = f"asixto-test-broker-{uuid.uuid4().hex[:8]}"
    with Connection(settings.CELERY_BROKER_URL, transport=Transport) as connection:
        queue = connection.SimpleQueue(name)
        channel = queue.channel
        try:
            first = channel._create_client()
            assert channel._create_client() is first
            for n in range(3):
                queue.put({"n": n})
            received = []
            for _n in range(3):
                message = queue.get(timeout=10)
                received.append(message.payload["n"])
                message.ack()
            assert received == [0, 1, 2]
            with pytest.raises(queue.Empty):
                queue.get(block=False)
            assert channel._create_client() is first
            channel._disconnect_pools()
            assert channel._create_client() is not first
        finally:
            channel.queue_delete(name)
            queue.close()
