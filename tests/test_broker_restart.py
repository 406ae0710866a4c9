"""A worker lives through a Redis restart (issue 19, found by tests/test_fault_run.py): one that was
waiting for work while holding a delayed task (a turn sent again after a pause, a webhook's next
attempt) exited, with status 0, when its broker connection broke. Kombu closes the channel a second
time after detaching its transport, and giving the delayed task back then needs a new Redis pool,
which fails with AttributeError, an error Celery does not recover from.

The worker reaches Redis through a TCP proxy (tests/support/tcp_proxy.py), cut for a few seconds:
Redis itself is shared and never stopped."""

import gc
import time
import weakref

from django.conf import settings

from asixto.celery import app
from tests.support import waiting
from tests.support.celery_worker import worker_process
from tests.support.tcp_proxy import TcpProxy

CEILING = 120  # seconds: a worker starting on a loaded 2-CPU machine
DELAY = 20  # seconds before a delayed task is due: the worker holds it, unacknowledged, meanwhile
ROUNDS = 3
OUTAGE_SECONDS = 3


def test_a_worker_holding_a_delayed_task_survives_a_redis_restart_and_runs_the_task(tmp_path):
    """Issue 19: three times, while the worker waits for work holding a task due later, Redis is cut
    for 3 s; the worker stays up, connects again, and every delayed task runs (after the broker's
    visibility timeout gives it back). Before the fix the worker ended with an unrecoverable
    AttributeError at one cut or another: the fault needs the worker's BRPOP connection to be
    reported broken after another of its connections, a matter of chance at each cut."""
    host, db = settings.REDIS_URL.rsplit("/", 1)
    log = tmp_path / "worker.log"
    with TcpProxy(int(host.rsplit(":", 1)[1])) as redis, app.connection_for_write() as connection, \
            worker_process(visibility_timeout=5, stderr=log.open("w"), REDIS_URL=f"redis://127.0.0.1:{redis.port}/{db}") as worker:

        def results(tasks):
            waiting.wait_for(lambda: all(task.ready() for task in tasks) or worker.poll() is not None,
                             "the tasks to run (or the worker to end)", CEILING)
            assert worker.poll() is None, log.read_text()[-3000:]
            return [task.get(timeout=CEILING) for task in tasks]

        broker, delayed = connection.default_channel.client, []
        for n in range(ROUNDS):
            # Connected and waiting for work: a task goes round.
            assert results([app.send_task("celery.accumulate", args=[f"ready {n}"])]) == [[f"ready {n}"]]
            delayed.append(app.send_task("celery.accumulate", args=[f"delayed {n}"], countdown=DELAY))
            # Held: in the broker's unacknowledged set. (Cut before, while Redis hands it over, it
            # could be lost: kombu's Redis transport removes it from the queue first. The sweeps
            # cover that for turns and webhooks.)
            waiting.wait_for(lambda: any(delayed[-1].id.encode() in held for held in broker.hvals("unacked")),
                             "the worker to hold the task", CEILING)
            redis.down()
            time.sleep(OUTAGE_SECONDS)
            redis.up()
        assert results(delayed) == [[f"delayed {n}"] for n in range(ROUNDS)]


def test_a_connection_closed_after_a_redis_outage_leaves_nothing_in_the_event_loop():
    """Issue 19 ("worker RSS grew 279 → 433 MB over three outages and stayed";
    bench/worker_memory.py): as Celery's consumer does after a broken broker connection, the
    connection is closed and a new one registered with the same event loop. The old transport, with
    its channel (which holds the messages it delivered and not yet acknowledged), is freed, and the
    loop's ticks poll the new transport only. Before the fix each outage left the old transport's
    poll callback in the loop's ticks, keeping it and its channels alive for good."""
    from kombu import Connection
    from kombu.asynchronous import Hub
    from kombu.common import ignore_errors

    host, db = settings.REDIS_URL.rsplit("/", 1)
    loop = Hub()
    ticks_before = set(loop.on_tick)
    with TcpProxy(int(host.rsplit(":", 1)[1])) as redis:
        url = f"redis://127.0.0.1:{redis.port}/{db}"
        old = Connection(url, transport="asixto.broker:Transport")
        old.default_channel.client.ping()
        old.register_with_event_loop(loop)
        ticks_of_one = len(set(loop.on_tick) - ticks_before)  # a count: the callbacks hold the transport
        assert ticks_of_one  # the transport polls on every tick
        transport, channel = weakref.ref(old.transport), weakref.ref(old.default_channel)
        redis.down()  # the outage: Celery's consumer closes the broken connection, then connects again
        ignore_errors(old, old.close)
        del old
        redis.up()
        with Connection(url, transport="asixto.broker:Transport") as new:
            new.default_channel.client.ping()
            new.register_with_event_loop(loop)
            gc.collect()
            assert transport() is None and channel() is None
            assert len(set(loop.on_tick) - ticks_before) == ticks_of_one
    loop.close()
