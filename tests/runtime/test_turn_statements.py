"""What a turn costs the database (P3, P4): each loop iteration's state is stored as it happens
(R10) in a few statements, not one per field or row. Counted, not timed: a change that brings
back a read or a write per iteration fails here, on any machine."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.models import Message, Turn, TurnEvent, TurnStep
from runtime.turn import turn_execute
from tests.runtime.runtime_support import agent, queued_turn, recording_app, register_soporte, tool_calls_seen
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say

SEARCH = "soporte__buscar_producto"
# Statements a tool-loop iteration (a model call and one tool call) may send: the model step
# stored with the tool step it asks for, its status event and the lease; the tool step done; and
# the tenant's search_path set on the connection taken back after each of the two waits.
MAX_STATEMENTS_PER_ITERATION = 4
# Statements of the rest of a turn: claiming it with its conversation, message and recent history
# (1; the catalog and the skills come from the process's cache), the loop's answer step before the
# reply's wait (1), the reply with the reply step, its event and final status (1), and the
# search_path on each connection taken (3). It was 10 when the history, the skills and the reply
# step each had a statement of their own.
MAX_STATEMENTS_PER_TURN = 6
# A turn in which the model answers at once: the claim and the reply, each on a connection of its own.
MAX_STATEMENTS_WITHOUT_TOOLS = 4


def statements_of_a_turn(world, tool_calls: int) -> tuple[int, object]:
    model = ScriptedModel([*(call(SEARCH, {"consulta": f"router {n}"}) for n in range(tool_calls)),
                           say("Tenemos routers."), say("Sí, tenemos el Router WiFi 6.")])
    turn = queued_turn(world, "¿Tienen routers?")
    with serve_asgi(model.app()) as url, agent(world, f"{url}/v1"), world.schema():
        connection.close()  # as a worker thread starts: no connection held
        with CaptureQueriesContext(connection) as queries:
            turn_execute(turn_id=turn.pk)
    return len(queries), turn


def test_an_iteration_of_the_tool_loop_costs_a_few_statements(committed_world, django_db_blocker):
    """P3, P4, R10: a turn with three tool calls sends at most MAX_STATEMENTS_PER_ITERATION more
    statements per iteration than a turn with one, the whole turn stays within its bound, and so
    does a turn without tool calls; every step, status event and the one reply are stored all
    the same."""
    world, log = committed_world, []
    with django_db_blocker.unblock(), serve_asgi(recording_app(build_app(SupportDesk()), log)) as tool_url:
        register_soporte(world, tool_url)
        statements_of_a_turn(world, 1)  # warms the catalog cache and the validators
        none, _turn = statements_of_a_turn(world, 0)
        one, _turn = statements_of_a_turn(world, 1)
        three, turn = statements_of_a_turn(world, 3)
        with world.schema():
            steps = list(TurnStep.objects.filter(turn_id=turn.pk).order_by("index").values_list("kind", "state", "idempotency_key"))
            events = list(TurnEvent.objects.filter(turn_id=turn.pk).order_by("id").values_list("kind", flat=True))
            replies = list(Message.objects.filter(conversation_id=turn.conversation_id, role="agent").values_list("text", flat=True))
            reply_id = Turn.objects.get(pk=turn.pk).reply_id
        connection.set_schema_to_public()
    keys = [key for _name, _args, key in tool_calls_seen(log)[-3:]]
    assert steps == [
        ("model", "done", ""), ("tool", "done", keys[0]), ("model", "done", ""), ("tool", "done", keys[1]),
        ("model", "done", ""), ("tool", "done", keys[2]), ("model", "done", ""), ("reply", "done", ""),
    ]
    assert keys == [f"turn:{turn.pk}:step:{n}" for n in (2, 4, 6)]
    assert events == ["status", "status", "status", "reply"]
    assert replies == ["Sí, tenemos el Router WiFi 6."] and reply_id is not None
    per_iteration = (three - one) / 2
    assert per_iteration <= MAX_STATEMENTS_PER_ITERATION, f"{per_iteration} statements per iteration"
    assert one - per_iteration <= MAX_STATEMENTS_PER_TURN, f"{one} statements for a turn of one tool call"
    assert none <= MAX_STATEMENTS_WITHOUT_TOOLS, f"{none} statements for a turn without tool calls"


# Statements of a customer message posted through the channel API: the key with its tenant (1),
# the conversation (1), the turns in flight (1), the message with its turn (1), the turn-order check
# before its task is sent (1), and the search_path for the key's read and for the tenant (2). It was
# 11 when the key, the message, the turn and the conversation's time each had an ORM statement and
# the three writes a transaction block.
MAX_STATEMENTS_PER_POST = 7
# Starting a conversation: the key (1), the conversation (1), the two search_paths (2).
MAX_STATEMENTS_PER_START = 4


def test_a_message_posted_through_the_channel_api_costs_a_few_statements(committed_world, django_db_blocker):
    """P4 (issue 22): the two requests of a channel's turn (start a conversation, post its message)
    stay within their statement bounds, and what they store is all there: the message, its queued
    turn with the posting key, and the conversation's time moved to the message's."""
    world = committed_world
    client = world.api(world.channel_key)
    with django_db_blocker.unblock():
        client.post("/api/v1/conversations", {"channel_kind": "chat"}, content_type="application/json")  # warm-up
        with CaptureQueriesContext(connection) as started:
            answer = client.post("/api/v1/conversations", {"channel_kind": "chat", "channel_name": "wa"},
                                 content_type="application/json")
        assert answer.status_code == 201, answer.content
        conversation_id = answer.json()["id"]
        with CaptureQueriesContext(connection) as posted:
            answer = client.post(f"/api/v1/conversations/{conversation_id}/messages", {"text": "¿Tienen routers?"},
                                 content_type="application/json")
        assert answer.status_code == 202, answer.content
        with world.schema():
            turn = Turn.objects.select_related("message", "conversation").get(pk=answer.json()["id"])
            key_id = turn.api_key_id
        connection.set_schema_to_public()
    assert (turn.status, turn.message.text, turn.message.role) == ("queued", "¿Tienen routers?", "customer")
    assert str(turn.conversation_id) == conversation_id and turn.conversation.updated_at == turn.message.created_at
    assert key_id is not None and turn.created_at >= turn.message.created_at
    assert len(started) <= MAX_STATEMENTS_PER_START, [q["sql"][:80] for q in started.captured_queries]
    assert len(posted) <= MAX_STATEMENTS_PER_POST, [q["sql"][:80] for q in posted.captured_queries]
