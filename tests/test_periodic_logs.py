"""Beat sends the webhook sweep every 30 s (issue 20): the routine "sending" line is DEBUG, not
INFO, so an idle platform's log stays quiet; other periodic tasks keep their INFO line."""

import logging

from celery.beat import ScheduleEntry, Scheduler

from asixto.celery import app


def _sending_lines(caplog, task):
    scheduler = Scheduler(app, lazy=True)
    entry = ScheduleEntry(name=task.rsplit(".", 1)[1], task=task, app=app)
    try:
        with caplog.at_level(logging.INFO):
            scheduler.apply_entry(entry)
    finally:
        app.control.purge()  # nothing of this test waits in the queue for a later test's worker
    return [record for record in caplog.records if record.name == "celery.beat" and task in record.getMessage()]


def test_it_sends_the_webhook_sweep_without_an_info_line(caplog, db):
    assert _sending_lines(caplog, "runtime.tasks.webhook_outbox_sweep") == []


def test_it_keeps_the_info_line_of_other_periodic_tasks(caplog, db):
    lines = _sending_lines(caplog, "tools.tasks.sync_all_servers")
    assert [record.levelno for record in lines] == [logging.INFO]
