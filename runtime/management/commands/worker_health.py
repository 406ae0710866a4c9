"""`manage.py worker_health [--timeout 5] [--hostname celery@host]`: a health check for process
managers (issue 21). Exit 0 when at least one Celery worker (or the one named) answers a ping
within the timeout; exit 1 with a one-line reason otherwise: the broker unreachable (named by its
error's class, never its URL) or no worker answering."""

from django.core.management.base import BaseCommand, CommandError

from asixto.health import broker_check


class Command(BaseCommand):
    help = "Exit 0 when a Celery worker answers a ping within --timeout seconds, 1 with the reason otherwise."

    def add_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for an answer (default 5)")
        parser.add_argument("--hostname", help="check this worker only (e.g. celery@host)")

    def handle(self, *args, timeout, hostname, **options):
        from asixto.celery import app

        try:
            broker_check(timeout=timeout)
        except Exception as exc:
            raise CommandError(f"broker unreachable: {type(exc).__name__}", returncode=1) from None
        answers = app.control.ping(timeout=timeout, destination=[hostname] if hostname else None)
        names = sorted(name for answer in answers for name, reply in answer.items() if reply.get("ok") == "pong")
        if not names:
            who = f"worker {hostname} did not answer" if hostname else "no worker answered"
            raise CommandError(f"{who} a ping within {timeout:g} s", returncode=1)
        self.stdout.write(f"ok: {', '.join(names)}")
