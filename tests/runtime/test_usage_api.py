"""Model usage and cost in the API (issue 20, A1, A4, T1, T3): `GET /api/v1/usage` totals the
turns, model requests and tokens recorded on the turns' steps, per day or per channel, with the
cost from the tenant's prices per million tokens — and matches the records it is computed from."""

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from decimal import Decimal

from runtime.models import Conversation, Message, Turn, TurnStep
from tests.runtime.runtime_support import tenant_settings

DAY_1 = datetime(2026, 11, 2, 15, 0, tzinfo=dt_timezone.utc)
DAY_2 = DAY_1 + timedelta(days=1)
PERIOD = "since=2026-11-01T00:00:00Z&until=2026-11-05T00:00:00Z"


def make_turn(world, when, *, channel=("chat", "whatsapp"), requests=()):
    """A turn posted at `when` on `channel`, with one stored step per (kind, tokens in, tokens out)
    of `requests`; a tool step between them, which is no model request."""
    with world.schema():
        conversation = Conversation.objects.create(language="es", channel_kind=channel[0], channel_name=channel[1])
        message = Message.objects.create(conversation=conversation, role="customer", text="hola")
        turn = Turn.objects.create(conversation=conversation, message=message, status=Turn.Status.DONE)
        Turn.objects.filter(pk=turn.pk).update(created_at=when)
        for index, (kind, tokens_in, tokens_out) in enumerate(requests, 1):
            TurnStep.objects.create(turn=turn, index=index * 2, kind=kind, state="done", tokens_in=tokens_in,
                                    tokens_out=tokens_out)
            TurnStep.objects.create(turn=turn, index=index * 2 + 1, kind="tool", state="done", tool_name="soporte__x")
        return turn


def known_records(world):
    make_turn(world, DAY_1, requests=[("model", 1000, 50), ("model", 1200, 30), ("reply", 400, 80)])
    make_turn(world, DAY_1 + timedelta(hours=2), channel=("voice", "twilio"), requests=[("model", 600, 20)])
    make_turn(world, DAY_2, requests=[("model", None, None), ("reply", 300, 10)])
    make_turn(world, DAY_2, channel=("voice", "twilio"), requests=[])  # failed before any model answer
    make_turn(world, DAY_1 - timedelta(days=10), requests=[("model", 99999, 99999)])  # outside the period


def get(world, query, key=None):
    return world.api(key).get(f"/api/v1/usage?{query}")


def test_it_totals_per_day_what_the_turns_recorded(alpha):
    """Issue 20: turns, model requests (model and reply steps, not tool steps), tokens in and out;
    a request without usage adds nothing and is counted apart; no price set → cost null."""
    known_records(alpha)
    response = get(alpha, PERIOD)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["group"] == "day" and body["price_in_per_million"] is None
    assert body["totals"] == {"turns": 4, "model_requests": 6, "failed_requests": 0, "requests_without_usage": 1, "tokens_in": 3500,
                              "tokens_out": 190, "cost": None}
    assert [(row["day"], row["turns"], row["model_requests"], row["tokens_in"], row["tokens_out"]) for row in body["rows"]] == [
        ("2026-11-02", 2, 4, 3200, 180), ("2026-11-03", 2, 2, 300, 10)]


def test_it_totals_per_channel_with_the_cost_of_the_tenants_prices(alpha):
    """Issue 20: per channel (kind and name), busiest first; cost = tokens × price / 1,000,000,
    in and out each at its own price."""
    known_records(alpha)
    with tenant_settings(alpha, price_in_per_million=Decimal("2.50"), price_out_per_million=Decimal("10")):
        body = get(alpha, f"{PERIOD}&group=channel").json()
    assert body["price_in_per_million"] == "2.5000" and body["price_out_per_million"] == "10.0000"
    rows = {(row["channel_kind"], row["channel_name"]): row for row in body["rows"]}
    assert [row["channel_kind"] for row in body["rows"]] == ["chat", "voice"]  # 2 turns each: by name then
    chat, voice = rows["chat", "whatsapp"], rows["voice", "twilio"]
    assert (chat["turns"], chat["model_requests"], chat["tokens_in"], chat["tokens_out"]) == (2, 5, 2900, 170)
    assert Decimal(chat["cost"]) == Decimal(2900) * Decimal("2.5") / 10**6 + Decimal(170) * 10 / 10**6
    assert (voice["turns"], voice["model_requests"], voice["tokens_in"]) == (2, 1, 600)
    assert Decimal(body["totals"]["cost"]) == Decimal("0.010650")  # 3500 × 2.5 + 190 × 10, per million
    assert all(row["day"] is None for row in body["rows"])


def test_a_period_without_reported_tokens_has_null_tokens_not_zero(alpha):
    """Issue 20: missing usage → null, not 0; even with a price, the cost is then null."""
    make_turn(alpha, DAY_1, requests=[("model", None, None)])
    with tenant_settings(alpha, price_in_per_million=Decimal("1")):
        totals = get(alpha, PERIOD).json()["totals"]
    assert totals == {"turns": 1, "model_requests": 1, "failed_requests": 0, "requests_without_usage": 1, "tokens_in": None,
                      "tokens_out": None, "cost": None}


def test_bad_periods_and_groups_are_a_clear_400(alpha):
    """A4: a reversed or too long period, an unknown group or parameter, a date that is no date."""
    for query, field in [("since=2026-11-05T00:00:00Z&until=2026-11-01T00:00:00Z", "since"),
                         ("since=2020-01-01T00:00:00Z&until=2026-01-01T00:00:00Z", "since"),
                         ("group=week", "group"), ("since=yesterday", "since"), ("tool=x", "tool")]:
        response = get(alpha, query)
        assert response.status_code == 400, query
        error = response.json()["error"]
        assert error["code"] == "invalid" and field in error["fields"], (query, error)


def test_only_admin_keys_of_the_tenant_read_its_usage(alpha, beta):
    """T1, T3: a channel key is refused; another tenant's key sees its own (empty) figures."""
    known_records(alpha)
    assert get(alpha, PERIOD, key=alpha.channel_key).status_code == 403
    assert get(alpha, PERIOD, key="").status_code == 401
    other = get(beta, PERIOD).json()
    assert other["totals"]["turns"] == 0 and other["rows"] == []
