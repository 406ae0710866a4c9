"""How the platform's log lines look and which ones are worth a line (issue 21, issue 20), wired
in settings.LOGGING for the web server and, through asixto/celery.py, for workers and beat.

- `JsonFormatter` (ASIXTO_LOG_FORMAT=json): one JSON object a line, with `time`, `level`,
  `logger`, `message`, the tenant, turn and trace id when known (asixto/log_context.py), and
  `exc_type` and `exc` (the traceback as one string) for errors.
- `ExpectedRefusals`: Django logs every PermissionDenied with its traceback; a 4xx is the normal
  answer to a wrong page or key, so it keeps its one warning line and loses the traceback.
- `RoutineTasks`: the periodic sweeps run every 30 to 60 s; their "sent", "received" and
  "succeeded" lines go to DEBUG, so an idle platform's log stays quiet. Their failures still log."""

import json
import logging
import logging.config
from datetime import datetime, timezone

from asixto import log_context


def configure(config):
    """settings.LOGGING_CONFIG, and the worker's and beat's logging with JSON lines: Python's
    warnings become log lines too, so that nothing else reaches the log as bare text."""
    from django.conf import settings

    logging.config.dictConfig(config)
    logging.captureWarnings(settings.ASIXTO_LOG_FORMAT == "json")


class JsonFormatter(logging.Formatter):
    def format(self, record):
        entry = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **log_context.current(),
        }
        if record.exc_info and record.exc_info[0] is not None:
            entry["exc_type"] = record.exc_info[0].__name__
            entry["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class ExpectedRefusals(logging.Filter):
    """On `django.request`: a response below 500 is logged without its exception."""

    def filter(self, record):
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True


class RoutineTasks(logging.Filter):
    """On Celery's beat, task-received and task-result loggers: the INFO lines naming one of
    `tasks` become DEBUG lines (kept only when that logger logs DEBUG)."""

    def __init__(self, tasks=()):
        super().__init__()
        self.tasks = tuple(tasks)

    def filter(self, record):
        if record.levelno != logging.INFO or not any(task in record.getMessage() for task in self.tasks):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
