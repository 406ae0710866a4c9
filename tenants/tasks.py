"""Tasks of the tenants app."""

from celery import shared_task
from django.db import connection


@shared_task
def worker_ping():
    """Answer from the worker with the schema the task ran in, as Django and as PostgreSQL see
    it: proves a worker is up and that tasks keep their tenant (T1)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_schema()")
        database_schema = cursor.fetchone()[0]
    return {"schema": connection.schema_name, "database_schema": database_schema}
