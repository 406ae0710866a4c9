"""Two admins demoting each other at the same moment (T4; issue 19's surviving mutant: the last-admin
check without its row locks): one change waits for the other's commit and is then refused, so the
tenant always keeps an active admin."""

import threading
import time

import psycopg
from django.conf import settings
from django.db import connection, transaction

from accounts.models import User
from accounts.services import user_update
from asixto.errors import ApplicationError

CEILING = 60.0


def test_two_admins_demoting_each_other_at_once_leave_one_admin(committed_world, django_db_blocker):
    world = committed_world
    with django_db_blocker.unblock():
        with world.schema():
            User.objects.filter(username="sam").update(role=User.Role.ADMIN)
            User.objects.exclude(username__in=["ana", "sam"]).update(role=User.Role.SUPPORT)  # two admins, no more
        first_done, release, outcomes = threading.Event(), threading.Event(), {}

        def demote(name, hold):
            try:
                with world.schema(), transaction.atomic():
                    user_update(user=User.objects.get(username=name), role=User.Role.SUPPORT)
                    if hold:
                        first_done.set()
                        release.wait(CEILING)  # committed only once the other change has started
                outcomes[name] = "demoted"
            except ApplicationError as refused:
                outcomes[name] = refused.code
            finally:
                connection.close()

        first = threading.Thread(target=demote, args=("ana", True))
        first.start()
        assert first_done.wait(CEILING)
        second = threading.Thread(target=demote, args=("sam", False))
        second.start()
        db = settings.DATABASES["default"]
        with psycopg.connect(host=db["HOST"] or None, port=db["PORT"] or None, user=db["USER"], dbname=db["NAME"],
                             password=db["PASSWORD"] or None, autocommit=True) as watcher:
            deadline = time.monotonic() + CEILING
            while second.is_alive() and time.monotonic() < deadline:  # until it waits on ana's locks, or is done
                waiting = watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                          "AND datname = current_database()").fetchone()[0]
                if waiting:
                    break
                time.sleep(0.02)
        release.set()
        first.join(CEILING)
        second.join(CEILING)
        with world.schema():
            admins = User.objects.filter(role=User.Role.ADMIN, is_active=True).count()
        connection.set_schema_to_public()
    assert outcomes == {"ana": "demoted", "sam": "last_admin"} and admins == 1, (outcomes, admins)
