"""Reminders and follow-ups are sent when they fall due (R12, A1, T1, T4): the periodic sweep stores
a notice in the conversation (its language, the time in its timezone) and pushes it to the
channel key's webhook, signed like a turn's reply but with its own event type; once, even with
two sweeps at once; never when cancelled or not yet due."""

import re
import threading
import time
from datetime import timedelta

from celery.contrib.testing.worker import start_worker
from django.db import connection
from django.utils import timezone
from django.utils.html import escape

from asixto.celery import app
from runtime.builtins.delivery import due_items_deliver
from runtime.builtins.models import FollowUp, Reminder
from runtime.models import ChannelWebhook, Conversation, Message, Turn
from runtime.tasks import deliver_due_scheduled
from runtime.webhooks import verify
from tenants.models import ApiKey
from tests.isolation import IsolationContract
from tests.runtime.runtime_support import CHANNEL_DEFAULTS, agent
from tests.runtime.test_webhooks import send
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say
from tests.support.webhook_receiver import Receiver

REMINDER = "asixto__create_reminder"
SECRET = "whsec_scheduled-test"


def hook_for(world, url):
    """The channel key's webhook, with a secret the test knows."""
    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(world.channel_key))
    with world.schema():
        ChannelWebhook.objects.create(api_key_id=key.pk, api_key_prefix=key.prefix, url=url, secret=SECRET)
    return key


def scheduled(world, *, due, model=Reminder, count=1, **conversation_values):
    """`count` items due at `due` in a conversation whose channel posts with the channel key (a
    turn of that key scheduled them), as the built-in tools store them."""
    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(world.channel_key))
    with world.schema():
        conversation = Conversation.objects.create(**{**CHANNEL_DEFAULTS, **conversation_values})
        message = Message.objects.create(conversation=conversation, role="customer", text="Recuérdame")
        turn = Turn.objects.create(conversation=conversation, message=message, api_key_id=key.pk, status="done")
        subject = {"text": "pagar la factura"} if model is Reminder else {"reason": "confirmar la instalación"}
        return [model.objects.create(turn=turn, conversation=conversation, due_at=due, idempotency_key=f"k{n}-{turn.pk}",
                                     **subject) for n in range(count)]


def sweep(callbacks):
    """The periodic task, as beat runs it; its deliveries run when the claim commits."""
    with callbacks(execute=True):
        deliver_due_scheduled()
    connection.set_schema_to_public()


def notices(request_list, event):
    return [request for request in request_list if request.headers["x-asixto-event"] == event]


def test_a_reminder_set_in_a_turn_is_sent_once_when_due(alpha, eager, django_capture_on_commit_callbacks):
    """R12, A1: a reminder the model created in a real turn is sent when due: the conversation gets
    a notice message (API and dashboard), the channel's webhook a `reminder.due` POST signed with
    the webhook's secret, in the conversation's language and timezone; a second sweep sends nothing."""
    receiver = Receiver([200])
    when = (timezone.now() + timedelta(days=3)).replace(hour=15, minute=0, second=0, microsecond=0)
    model = ScriptedModel([call(REMINDER, {"when": when.strftime("%Y-%m-%dT%H:%M+00:00"), "text": "pagar la factura"}),
                           say("Listo."), say("Te lo recordaré.")])
    with serve_asgi(receiver.app()) as hook, serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        hook_for(alpha, f"{hook}/hook")
        client = alpha.api(alpha.channel_key)
        conversation = send(client, "/api/v1/conversations", CHANNEL_DEFAULTS).json()
        with django_capture_on_commit_callbacks(execute=True):
            accepted = send(client, conversation["messages_url"], {"text": "Recuérdame pagar la factura el jueves"})
        assert accepted.status_code == 202
        connection.set_schema_to_public()
        sweep(django_capture_on_commit_callbacks)
        assert notices(receiver.received, "reminder.due") == []  # not due yet
        with alpha.schema():
            Reminder.objects.update(due_at=timezone.now() - timedelta(seconds=1))
        sweep(django_capture_on_commit_callbacks)
        sweep(django_capture_on_commit_callbacks)
    [request] = notices(receiver.received, "reminder.due")
    assert verify(secret=SECRET, timestamp=request.headers["x-asixto-timestamp"], body=request.body,
                  signature=request.headers["x-asixto-signature"])
    body = request.json
    assert body["event"] == "reminder.due" and body["conversation_id"] == conversation["id"]
    assert body["scheduled"]["kind"] == "reminder" and body["scheduled"]["text"] == "pagar la factura"
    assert body["turn_id"] == accepted.json()["id"] and body["delivery_id"] == request.headers["x-asixto-delivery"]
    assert "pagar la factura" in body["message"]["text"] and body["message"]["role"] == "notice"
    with alpha.schema():
        reminder = Reminder.objects.get()
        assert reminder.state == "delivered" and str(reminder.notice_id) == body["message"]["id"]
    listed = alpha.api(alpha.channel_key).get(conversation["messages_url"]).json()["results"]
    assert [m["role"] for m in listed] == ["customer", "agent", "notice"] and listed[2]["text"] == body["message"]["text"]
    page = alpha.dashboard(alpha.support_username).get(f"/conversations/{conversation['id']}/").content.decode()
    assert escape(body["message"]["text"]) in page
    attempts = alpha.api().get(f"/api/v1/reminders/{reminder.pk}").json()
    assert attempts["state"] == "delivered"


def test_the_notice_is_in_the_conversations_language_and_timezone(alpha, eager, django_capture_on_commit_callbacks):
    """R12, R7: 15:00 UTC is 10:00 in Bogotá and 20:30 in Kolkata; Spanish and English date words."""
    due = (timezone.now() - timedelta(days=1)).replace(hour=15, minute=0, second=0, microsecond=0)
    receiver = Receiver([200])
    with serve_asgi(receiver.app()) as hook:
        hook_for(alpha, f"{hook}/hook")
        [spanish] = scheduled(alpha, due=due, language="es", timezone="America/Bogota")
        [english] = scheduled(alpha, due=due, model=FollowUp, language="en", timezone="Asia/Kolkata")
        with alpha.schema():  # no scheduling turn: the conversation's channel key is found from its turns
            FollowUp.objects.filter(pk=english.pk).update(turn=None)
        sweep(django_capture_on_commit_callbacks)
    with alpha.schema():
        spanish_text = Reminder.objects.get(pk=spanish.pk).notice.text
        english_text = FollowUp.objects.get(pk=english.pk).notice.text
    # The dashboard's date formats (asixto/formats): "30 nov 2026, 10:00 -05", "Nov 30, 2026, 20:30 IST".
    assert re.search(r"\b\d{1,2} [a-z]{3,4} \d{4}, 10:00\b", spanish_text), spanish_text
    assert re.search(r"\b[A-Z][a-z]{2} \d{1,2}, \d{4}, 20:30\b", english_text), english_text
    assert "pagar la factura" in spanish_text and "confirmar la instalación" in english_text
    by_event = {request.headers["x-asixto-event"]: request.json for request in receiver.received}
    assert set(by_event) == {"reminder.due", "follow_up.due"}
    assert by_event["reminder.due"]["scheduled"]["due_at_local"].startswith(
        timezone.localtime(due, timezone.get_fixed_timezone(-300)).strftime("%Y-%m-%dT10:00"))
    assert by_event["follow_up.due"]["scheduled"]["timezone"] == "Asia/Kolkata"
    assert by_event["follow_up.due"]["turn_id"] is None
    page = alpha.dashboard(alpha.admin_username).get("/webhooks/").content.decode()
    assert f"/conversations/{english.conversation_id}/#scheduled" in page  # each attempt links to its notice


def test_not_yet_due_and_cancelled_items_are_not_sent(alpha, eager, django_capture_on_commit_callbacks):
    """R12: an item due later stays pending; one cancelled through the API is never sent, even
    when its time passes; a sent one cannot be cancelled (conflict)."""
    receiver = Receiver([200])
    now = timezone.now()
    with serve_asgi(receiver.app()) as hook:
        hook_for(alpha, f"{hook}/hook")
        [later] = scheduled(alpha, due=now + timedelta(hours=1))
        [cancelled] = scheduled(alpha, due=now + timedelta(hours=1), model=FollowUp)
        response = alpha.api().post(f"/api/v1/follow-ups/{cancelled.pk}/cancel")
        assert response.status_code == 200 and response.json()["state"] == "cancelled"
        with alpha.schema():
            FollowUp.objects.filter(pk=cancelled.pk).update(due_at=now - timedelta(minutes=1))
        sweep(django_capture_on_commit_callbacks)
        assert receiver.received == []
        with alpha.schema():
            assert Reminder.objects.get(pk=later.pk).state == "pending"
            assert FollowUp.objects.get(pk=cancelled.pk).state == "cancelled"
            assert not Message.objects.filter(role="notice").exists()
            Reminder.objects.filter(pk=later.pk).update(due_at=now - timedelta(minutes=1))
        sweep(django_capture_on_commit_callbacks)
        assert len(receiver.received) == 1
        again = alpha.api().post(f"/api/v1/reminders/{later.pk}/cancel")
        assert again.status_code == 400 and again.json()["error"]["code"] == "conflict"
        with alpha.schema():
            assert Reminder.objects.get(pk=later.pk).state == "delivered"


def test_a_reminder_pending_while_its_key_was_rotated_reaches_the_webhook_that_moved(
        alpha, eager, django_capture_on_commit_callbacks):
    """R12, issue 20 (rotation): a reminder scheduled through a channel key that is then rotated
    with no grace (the old key revoked at once, its webhook moved to the new key) is still sent
    to that webhook when due; once the integration's current key is revoked, nothing is."""
    receiver = Receiver([200])
    now = timezone.now()
    with serve_asgi(receiver.app()) as hook:
        old = hook_for(alpha, f"{hook}/hook")
        [first, second] = scheduled(alpha, due=now + timedelta(hours=1), count=2)
        rotated = alpha.api().post(f"/api/v1/api-keys/{old.pk}/rotate", "{}", content_type="application/json")
        assert rotated.status_code == 201, rotated.content
        with alpha.schema():
            Reminder.objects.filter(pk=first.pk).update(due_at=now - timedelta(minutes=1))
        sweep(django_capture_on_commit_callbacks)
        assert [request.headers["x-asixto-event"] for request in receiver.received] == ["reminder.due"]
        assert alpha.api().delete(f"/api/v1/api-keys/{rotated.json()['id']}").status_code == 200
        with alpha.schema():
            Reminder.objects.filter(pk=second.pk).update(due_at=now - timedelta(minutes=1))
        sweep(django_capture_on_commit_callbacks)
        assert len(receiver.received) == 1
        with alpha.schema():
            assert Reminder.objects.get(pk=second.pk).state == "delivered"  # in the conversation, as a notice


def test_admins_cancel_in_the_dashboard_and_support_staff_cannot(alpha):
    """R12, T4, A2: the conversation page lists the pending reminder with a cancel button for
    admins; support staff see it without one and their POST is refused."""
    [item] = scheduled(alpha, due=timezone.now() + timedelta(hours=2))
    url = f"/conversations/{item.conversation_id}/reminder/{item.pk}/cancel/"
    support = alpha.dashboard(alpha.support_username)
    page = support.get(f"/conversations/{item.conversation_id}/").content.decode()
    assert "pagar la factura" in page and url not in page
    assert support.post(url).status_code == 403
    admin = alpha.dashboard(alpha.admin_username)
    assert url in admin.get(f"/conversations/{item.conversation_id}/").content.decode()
    assert admin.post(url).status_code == 302
    with alpha.schema():
        assert Reminder.objects.get(pk=item.pk).state == "cancelled"


def test_an_item_another_sweep_holds_is_skipped_not_waited_for_and_sent_once(committed_world, eager):
    """R12, R10: while another sweep holds an item's row lock, this sweep skips it at once (SKIP
    LOCKED) instead of waiting or sending it too; after that sweep commits, it is sent once."""
    world = committed_world
    receiver = Receiver([200])
    with serve_asgi(receiver.app()) as hook:
        hook_for(world, f"{hook}/hook")
        [item] = scheduled(world, due=timezone.now() - timedelta(minutes=1))
        holding, release, done = threading.Event(), threading.Event(), threading.Event()

        def other_sweep():
            try:
                with world.schema(), connection.cursor() as cursor:
                    cursor.execute("BEGIN")
                    cursor.execute("SELECT id FROM runtime_reminder WHERE id = %s FOR UPDATE", [item.pk])
                    holding.set()
                    release.wait(60)
                    cursor.execute("ROLLBACK")
            finally:
                connection.close()
                done.set()

        thread = threading.Thread(target=other_sweep)
        thread.start()
        assert holding.wait(60)
        with world.schema():
            assert due_items_deliver() == 0  # returns at once: the locked row is skipped
        release.set()
        assert done.wait(60)
        with world.schema():
            assert due_items_deliver() == 1
            assert due_items_deliver() == 0
            assert Message.objects.filter(role="notice").count() == 1
    assert len(receiver.received) == 1


def test_two_sweeps_at_once_send_each_item_once(committed_world, eager):
    """R12: two sweeps started together over 40 due items: every item is sent exactly once."""
    world = committed_world
    receiver = Receiver([200])
    with serve_asgi(receiver.app()) as hook:
        hook_for(world, f"{hook}/hook")
        items = scheduled(world, due=timezone.now() - timedelta(minutes=1), count=40)
        start, counts = threading.Barrier(2), []

        def run_sweep():
            try:
                start.wait(60)
                with world.schema():
                    counts.append(due_items_deliver())
            finally:
                connection.close()

        threads = [threading.Thread(target=run_sweep) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        with world.schema():
            assert Message.objects.filter(role="notice").count() == 40
            assert Reminder.objects.filter(state="delivered").count() == 40
    assert sum(counts) == 40
    sent = [request.json["scheduled"]["id"] for request in receiver.received]
    assert sorted(sent) == sorted(str(item.pk) for item in items)


def make_reminder(world):
    return scheduled(world, due=timezone.now() + timedelta(hours=1))[0].pk


class TestReminderIsolation(IsolationContract):
    list_url = "/api/v1/reminders"
    detail_url = "/api/v1/reminders/{id}"

    def make_object(self, world):
        return make_reminder(world)

    def test_it_cannot_cancel_another_tenants_reminder(self, alpha, beta):
        """T1, T2: A's key cancelling B's reminder gets 404; B's stays pending."""
        reminder_id = make_reminder(beta)
        connection.set_schema_to_public()
        assert alpha.api().post(f"/api/v1/reminders/{reminder_id}/cancel").status_code == 404
        with beta.schema():
            assert Reminder.objects.get(pk=reminder_id).state == "pending"


class TestFollowUpIsolation(IsolationContract):
    list_url = "/api/v1/follow-ups"
    detail_url = "/api/v1/follow-ups/{id}"

    def make_object(self, world):
        return scheduled(world, due=timezone.now() + timedelta(hours=1), model=FollowUp)[0].pk


def test_beat_runs_the_sweep():
    """R12: the worker's beat schedule (started by ./run with `worker --beat`) runs the sweep."""
    from django.conf import settings

    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "runtime.tasks.deliver_due_scheduled" in tasks


def test_the_sweep_and_the_delivery_run_on_a_real_worker(committed_world, django_db_blocker, settings):
    """R12, R1: on a real worker over Redis, the periodic sweep (sent as beat sends it, from the
    public schema) finds the tenant's due reminder, and its delivery is a task of its own in the
    tenant's schema: a 503 comes back through the broker after the pause, then 200, signed."""
    settings.ASIXTO_WEBHOOK_RETRY_DELAYS = [1.0]
    world, receiver = committed_world, Receiver([503, 200])
    with django_db_blocker.unblock(), serve_asgi(receiver.app()) as hook, \
            start_worker(app, perform_ping_check=False, pool="solo", loglevel="WARNING"):
        hook_for(world, f"{hook}/hook")
        [item] = scheduled(world, due=timezone.now() - timedelta(seconds=1))
        connection.set_schema_to_public()
        deliver_due_scheduled.delay()
        deadline = time.monotonic() + 60
        while len(receiver.received) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(receiver.received) == 2, receiver.received
        for request in receiver.received:
            assert request.headers["x-asixto-event"] == "reminder.due" and request.json["scheduled"]["id"] == str(item.pk)
            assert verify(secret=SECRET, timestamp=request.headers["x-asixto-timestamp"], body=request.body,
                          signature=request.headers["x-asixto-signature"])
        assert [r.headers["x-asixto-attempt"] for r in receiver.received] == ["1", "2"]
        with world.schema():
            assert Reminder.objects.get(pk=item.pk).state == "delivered"
            assert Message.objects.filter(role="notice").count() == 1
    connection.set_schema_to_public()
