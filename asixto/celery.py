"""The Celery app. tenant-schemas-celery stamps each task with the schema it was sent from, and
the worker runs it in that schema (T1)."""

import os

from tenant_schemas_celery.app import CeleryApp

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")

app = CeleryApp("asixto")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
