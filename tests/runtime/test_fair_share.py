"""Fair share between tenants (issue 19, M4): an operator sets how many turns of a tenant may be
in flight and how many messages a channel key may post a minute; beyond either the channel API
answers 429 with Retry-After and stores nothing, while another tenant (and another key) goes on."""

import json

from django.db import connection
from django.test import Client

from runtime.models import Message
from tenants.models import ApiKey
from tenants.services import api_key_create
from tests.runtime.test_channel_api import send, start


def operator_patch(world, **limits):
    _key, plaintext = api_key_create(tenant=None, name="ops", scope=ApiKey.Scope.OPERATOR)
    ops = Client(headers={"Authorization": f"Bearer {plaintext}"})
    response = ops.patch(f"/api/v1/operator/tenants/{world.tenant.pk}", json.dumps(limits), content_type="application/json")
    assert response.status_code == 200, response.content
    assert all(response.json()[name] == value for name, value in limits.items())
    connection.set_schema_to_public()


def post_message(world, conversation, text, key=None, **extra):
    return send(world.api(key or world.channel_key), conversation["messages_url"], {"text": text, **extra})


def test_a_tenant_at_its_turns_in_flight_is_refused_and_another_tenant_is_not(alpha, beta):
    """Issue 19 M4: alpha may have 2 turns in flight; its third message is a 429 with Retry-After and
    is not stored; beta, on the same workers, posts as before; a repeated external_id still gets
    its first turn."""
    operator_patch(alpha, turns_in_flight_limit=2)
    conversation = start(alpha)
    first = post_message(alpha, conversation, "uno", external_id="m-1")
    assert first.status_code == 202 and post_message(alpha, conversation, "dos").status_code == 202
    refused = post_message(alpha, conversation, "tres")
    assert refused.status_code == 429, refused.content
    assert refused.json()["error"]["code"] == "throttled" and int(refused["Retry-After"]) >= 1
    assert post_message(alpha, conversation, "uno", external_id="m-1").json()["id"] == first.json()["id"]
    with alpha.schema():
        assert sorted(Message.objects.values_list("text", flat=True)) == ["dos", "uno"]
    other = start(beta)
    assert post_message(beta, other, "hola").status_code == 202


def test_a_key_over_its_messages_per_minute_is_refused_and_another_key_is_not(alpha):
    """Issue 19 M4: 3 messages a minute per key: the fourth from the same key is a 429 with the
    seconds until its next message, and stores nothing; the tenant's other key has its own bucket."""
    operator_patch(alpha, messages_per_minute=3)
    conversation = start(alpha)
    assert [post_message(alpha, conversation, f"m{n}").status_code for n in range(3)] == [202, 202, 202]
    refused = post_message(alpha, conversation, "m3")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60, refused.content
    with alpha.schema():
        _row, other_key = api_key_create(tenant=alpha.tenant, name="voice", scope=ApiKey.Scope.CHANNEL)
        assert Message.objects.count() == 3
    assert post_message(alpha, start(alpha, key=other_key), "otra llave", key=other_key).status_code == 202


def test_operators_set_the_limits_and_tenants_cannot(alpha):
    """Issue 19 M4: the limits are the operator's: shown in the operator API, refused in the tenant's
    own settings, bad values a 400."""
    operator_patch(alpha, turns_in_flight_limit=40, messages_per_minute=90)
    own = alpha.api().patch("/api/v1/tenant", json.dumps({"messages_per_minute": 100000}), content_type="application/json")
    assert own.status_code == 400
    _key, plaintext = api_key_create(tenant=None, name="ops2", scope=ApiKey.Scope.OPERATOR)
    ops = Client(headers={"Authorization": f"Bearer {plaintext}"})
    for bad in (0, -1, "x"):
        response = ops.patch(f"/api/v1/operator/tenants/{alpha.tenant.pk}", json.dumps({"messages_per_minute": bad}),
                             content_type="application/json")
        assert response.status_code == 400, (bad, response.content)
