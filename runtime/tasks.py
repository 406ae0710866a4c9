"""Celery tasks of the runtime: thin, load by id and call one service.

`turn_run` acknowledges late and is rejected (so redelivered) when its worker dies: a turn that
was cut short runs again, and `turn_execute` resumes it from its stored steps (R10).
`requeue_stalled_turns` (periodic) sends again the turns whose task never reached a worker or
whose worker died, sooner than the broker's own redelivery: it reads from the time its own message
was sent which turns the queue has handed out (runtime/turn.py, `stalled_turns_mark_resent`).
`webhook_send` makes one attempt of a delivery owed in the webhook outbox (written with the reply)
and queues the next one; `webhook_outbox_sweep` (periodic) queues any owed delivery whose task was
lost. `webhook_deliver` is the older task, kept for deliveries queued before the outbox. Receivers
drop repeats by `X-Asixto-Delivery`."""

from celery import shared_task
from django_tenants.utils import get_tenant_model, tenant_context

from asixto.celery import sent_at
from runtime import webhooks
from runtime.turn import stalled_turns_mark_resent, turn_execute


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def turn_run(turn_id):
    """Run one turn (R1) in the schema the task was sent from."""
    turn_execute(turn_id=turn_id)


@shared_task(bind=True, acks_late=True, ignore_result=True, max_retries=None)
def webhook_deliver(self, webhook_id, turn_id, delivery_id, message_id=None):
    """POST a finished turn (or, with `message_id` and no turn, a reminder's or follow-up's
    notice) to a webhook; on a retryable failure, again after the planned pause."""
    delay = webhooks.deliver(webhook_id=webhook_id, turn_id=turn_id, message_id=message_id, delivery_id=delivery_id,
                             attempt=self.request.retries + 1)
    if delay is not None:
        raise self.retry(countdown=delay)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def webhook_send(outbox_id):
    """Send one owed delivery (runtime/webhooks.py, the outbox); queue its next attempt if it failed
    and may be retried (the sweep sends it if this is lost)."""
    delay = webhooks.outbox_send(outbox_id)
    if delay is not None:
        webhook_send.apply_async((outbox_id,), countdown=delay)


@shared_task(ignore_result=True)
def webhook_outbox_sweep():
    """Periodic: queue every owed delivery whose task was lost, in every tenant."""
    for tenant in get_tenant_model().objects.exclude(schema_name="public"):
        with tenant_context(tenant):
            for outbox_id in webhooks.outbox_due():
                webhook_send.delay(str(outbox_id))


@shared_task(bind=True, ignore_result=True)
def requeue_stalled_turns(self):
    """Periodic: send again the turns of every tenant whose task was lost or whose worker died."""
    sent = sent_at(self.request)
    for tenant in get_tenant_model().objects.exclude(schema_name="public"):
        with tenant_context(tenant):
            for turn_id in stalled_turns_mark_resent(sent_at=sent):
                turn_run.delay(str(turn_id))


@shared_task(ignore_result=True)
def deliver_due_scheduled():
    """Periodic: the reminders and follow-ups of every tenant that fell due, each sent once
    (runtime/builtins/delivery.py)."""
    from runtime.builtins.delivery import due_items_deliver

    for tenant in get_tenant_model().objects.exclude(schema_name="public"):
        with tenant_context(tenant):
            due_items_deliver()


@shared_task(ignore_result=True)
def routing_index_build():
    """The routing vectors of the tenant's live tools (R6), off the turn path (runtime/routing/index_store.py)."""
    from django.core.cache import cache

    from runtime.routing.index_store import QUEUED_KEY, build_live

    try:
        build_live()
    finally:
        cache.delete(QUEUED_KEY)
