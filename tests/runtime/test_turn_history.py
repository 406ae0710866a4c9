"""What a turn's model reads of the conversation so far (R3): the newest HISTORY_MESSAGES earlier
messages, oldest first, and a note counting the older ones; read with the turn's claim."""

from datetime import timedelta

from django.utils import timezone

from runtime.channel import conversation_start
from runtime.models import Message
from runtime.selectors import HISTORY_MESSAGES
from tests.runtime.runtime_support import CHANNEL_DEFAULTS, agent, post, run
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, say


def conversation_of(world, count: int):
    """A conversation with `count` earlier messages m0…, customer and agent in turn, an hour old."""
    with world.schema():
        conversation = conversation_start(data=CHANNEL_DEFAULTS)
        started = timezone.now() - timedelta(hours=1)
        for n in range(count):
            message = Message.objects.create(conversation=conversation, role="customer" if n % 2 == 0 else "agent",
                                             text=f"m{n}")
            Message.objects.filter(pk=message.pk).update(created_at=started + timedelta(seconds=n))
    return conversation


def history_read(world, count: int) -> tuple[list[str], list[str]]:
    """The earlier messages and the system notes of the first model request of a turn posted
    after `count` messages."""
    conversation = conversation_of(world, count)
    model = ScriptedModel([say("Claro.")])
    with serve_asgi(model.app()) as url, agent(world, f"{url}/v1"):
        run(world, post(world, "¿Y el precio?", conversation=conversation))
    messages = model.requests[0]["messages"]
    earlier = [m["content"] for m in messages[1:-1] if m["role"] != "system"]
    notes = [m["content"] for m in messages[1:] if m["role"] == "system"]
    assert messages[-1]["content"] == "¿Y el precio?"
    return earlier, notes


def test_a_long_conversation_shows_its_newest_messages_and_counts_the_older_ones(alpha):
    """R3: 45 earlier messages: the newest 40, in order, and a note that 5 are not shown."""
    earlier, notes = history_read(alpha, HISTORY_MESSAGES + 5)
    assert earlier == [f"m{n}" for n in range(5, HISTORY_MESSAGES + 5)]
    assert len(notes) == 1 and "5" in notes[0]


def test_a_short_conversation_shows_all_of_it(alpha):
    """R3: exactly HISTORY_MESSAGES earlier messages: all of them, no note."""
    earlier, notes = history_read(alpha, HISTORY_MESSAGES)
    assert earlier == [f"m{n}" for n in range(HISTORY_MESSAGES)] and notes == []
