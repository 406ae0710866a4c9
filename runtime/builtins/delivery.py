"""Reminders and follow-ups that fall due (R12): sent once, cancellable until then.

`due_items_deliver` (run by the periodic `runtime.tasks.deliver_due_scheduled`, every
ASIXTO_SCHEDULED_SWEEP_SECONDS) claims the pending items whose time has passed with
`SELECT … FOR UPDATE SKIP LOCKED`, so two sweeps at once never take the same item; in the same
transaction it stores the notice as a message of the conversation (role `notice`, written in the
conversation's language with the time in its timezone) and marks the item delivered. Once that
commits, the notice goes to the webhook of the key the conversation's channel posts with
(runtime/webhooks.py: signed, retried, every attempt recorded) as `reminder.due` or
`follow_up.due`. A cancelled item is never sent; a delivered one cannot be cancelled."""

from functools import partial

from django.conf import settings
from django.db import connection, transaction
from django.utils import formats, timezone, translation
from django.utils.translation import gettext as _
from django_tenants.utils import tenant_context

from asixto.errors import ApplicationError
from runtime.builtins.followups import zone_of
from runtime.builtins.models import FollowUp, Reminder
from runtime.models import Message, Turn

SCHEDULED = (Reminder, FollowUp)
BATCH = 200  # items claimed per kind and sweep; the next sweep takes the rest


def notice_text(*, item, language: str, tz_name: str) -> str:
    """What the customer reads, in `language`, the due time shown in `tz_name`."""
    with translation.override(language or settings.LANGUAGE_CODE):
        when = formats.date_format(timezone.localtime(item.due_at, zone_of(tz_name)), "DATETIME_FORMAT")
        if isinstance(item, Reminder):
            return _("Reminder (%(when)s): %(text)s") % {"when": when, "text": item.text}
        return _("Following up as agreed (%(when)s): %(reason)s") % {"when": when, "reason": item.reason}


def _posting_key(item):
    """The API key the conversation's channel posts with: the scheduling turn's, else the latest
    turn's that has one (none for the dashboard's playground)."""
    if item.turn_id:
        key = Turn.objects.filter(pk=item.turn_id).values_list("api_key_id", flat=True).first()
        if key:
            return key
    return (Turn.objects.filter(conversation_id=item.conversation_id, api_key_id__isnull=False)
            .order_by("-created_at").values_list("api_key_id", flat=True).first())


def due_items_deliver(*, now=None) -> int:
    """Deliver the pending items due by `now` (up to BATCH of each kind: the next sweep takes the
    rest); returns how many this call delivered."""
    now = now or timezone.now()
    delivered = 0
    for model in SCHEDULED:
        with transaction.atomic():
            due = list(model.objects.select_for_update(skip_locked=True, of=("self",))
                       .filter(state=model.State.PENDING, due_at__lte=now).order_by("due_at")[:BATCH])
            for item in due:
                conversation = item.conversation
                if conversation is None:  # the conversation was deleted: nobody to send it to
                    model.objects.filter(pk=item.pk).update(state=model.State.CANCELLED, cancelled_at=now)
                    continue
                notice = Message.objects.create(conversation=conversation, role=Message.Role.NOTICE, text=notice_text(
                    item=item, language=conversation.language, tz_name=conversation.timezone))
                model.objects.filter(pk=item.pk).update(state=model.State.DELIVERED, delivered_at=now, notice=notice)
                from runtime import webhooks  # it imports the built-ins' models

                owed = webhooks.outbox_row(api_key_id=_posting_key(item), message_id=notice.pk)
                if owed is not None:  # owed in the notice's transaction; sent after the commit, or by the sweep
                    owed_model, values = owed
                    owed_model.objects.create(**values)
                    transaction.on_commit(partial(_notify, connection.tenant, values["id"]), robust=True)
                delivered += 1
    return delivered


def _notify(tenant, outbox_id):
    from runtime import webhooks

    with tenant_context(tenant):  # a commit's callbacks may run after the sweep left the schema
        webhooks.outbox_queue(outbox_id)


def scheduled_cancel(*, item):
    """Cancel a pending reminder or follow-up; a delivered one stays delivered (an error)."""
    model = type(item)
    with transaction.atomic():
        locked = model.objects.select_for_update().get(pk=item.pk)
        if locked.state == model.State.DELIVERED:
            raise ApplicationError(_("It was already sent; it cannot be cancelled."), code="conflict")
        if locked.state == model.State.PENDING:
            locked.state, locked.cancelled_at = model.State.CANCELLED, timezone.now()
            locked.save(update_fields=["state", "cancelled_at"])
    return locked
