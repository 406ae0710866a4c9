"""Celery tasks of the runtime: thin, load by id and call one service.

`turn_run` acknowledges late and is rejected (so redelivered) when its worker dies: a turn that
was cut short runs again, and `turn_execute` resumes it from its stored steps (R10)."""

from celery import shared_task

from runtime.turn import turn_execute


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def turn_run(turn_id):
    """Run one turn (R1) in the schema the task was sent from."""
    turn_execute(turn_id=turn_id)
