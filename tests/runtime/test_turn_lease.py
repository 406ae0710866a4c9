"""Only the runner holding a turn writes to it (R10; issue 19's surviving mutants: a step or reply
written without checking the runner would let a runner that lost its lease write over the one
that took the turn)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from runtime.models import Message, Turn, TurnEvent, TurnStep
from runtime.turn_writes import LeaseLost, reply_write, step_write, turn_claim
from tests.runtime.runtime_support import queued_turn


def claimed(world, text="Hola"):
    turn = queued_turn(world, text)
    with world.schema():
        now = timezone.now()
        assert turn_claim(turn_id=turn.pk, runner="holder", lease_until=now + timedelta(minutes=5), now=now) is not None
    return turn


def test_a_runner_that_does_not_hold_the_turn_writes_no_step(alpha):
    """R10: a step from another runner raises LeaseLost and stores nothing; the holder's is stored."""
    turn = claimed(alpha)
    step = {"kind": TurnStep.Kind.MODEL, "state": TurnStep.State.DONE, "finished_at": timezone.now()}
    with alpha.schema():
        with pytest.raises(LeaseLost):
            step_write(turn_id=turn.pk, runner="late", lease_until=timezone.now() + timedelta(minutes=5),
                       steps={0: step}, turn={"iterations": 9}, rows=[])
        assert not TurnStep.objects.filter(turn=turn).exists() and Turn.objects.get(pk=turn.pk).iterations != 9
        step_write(turn_id=turn.pk, runner="holder", lease_until=timezone.now() + timedelta(minutes=5),
                   steps={0: step}, turn={}, rows=[])
        assert TurnStep.objects.filter(turn=turn).count() == 1


def test_a_runner_that_does_not_hold_the_turn_stores_no_reply(alpha):
    """R10: the reply of another runner is not stored (no agent message, no event, status kept);
    the holder's is, once."""
    turn = claimed(alpha)
    reply = {"conversation_id": turn.conversation_id, "status": Turn.Status.DONE, "error_code": "", "error_detail": "",
             "event_data": {}, "finished_at": timezone.now()}
    with alpha.schema():
        assert reply_write(turn_id=turn.pk, runner="late", reply="de otro", **reply).stored is False
        assert Turn.objects.get(pk=turn.pk).status == Turn.Status.RUNNING
        assert not Message.objects.filter(role="agent").exists() and not TurnEvent.objects.filter(turn=turn).exists()
        assert reply_write(turn_id=turn.pk, runner="holder", reply="Hola", **reply).stored is True
        assert reply_write(turn_id=turn.pk, runner="holder", reply="otra vez", **reply).stored is False
        assert list(Message.objects.filter(role="agent").values_list("text", flat=True)) == ["Hola"]
