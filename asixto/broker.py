"""The Celery broker's transport when the broker is Redis: kombu's own, with one Redis client per
channel (and connection pool) instead of a new one for every message it delivers and every
acknowledgement. kombu builds a fresh `redis.Redis` for each, and redis-py fills a few hundred
response callbacks into every new client: about a tenth of a worker's CPU per turn (P4). The
client is safe to share between threads: each command takes a connection from the pool.

It also keeps a worker alive through a Redis restart (issue 19, tests/test_broker_restart.py).
When the broker connection breaks, Celery collects it (kombu detaches the channel's transport from
its connection) and then closes it; a channel whose first close was cut short by the broken socket
is closed again then, and gives its unacknowledged messages back, which needs a new Redis pool built
from the detached transport: an AttributeError that Celery does not recover from, so the worker
ended (with status 0). Here that is a connection error, which Celery recovers from by connecting
again; the messages stay in Redis's unacknowledged set and come back after the visibility timeout.

And it lets go of a broken connection's transport (issue 19: the worker's memory grew with each
Redis outage, bench/worker_memory.py). Kombu registers a transport with the worker's event loop (a
poll callback on every tick, timers every few seconds) and never takes it back: after each
reconnection the dead transport, its channels and the messages they had delivered and not yet
acknowledged (about one per turn in flight) stayed reachable from the loop, and were polled on.
Closing the connection now removes them from the loop (tests/test_broker_restart.py).

That was not all that held them (found with `bench/worker_memory.py --holders
kombu.transport.virtual.base.Message --roots`). Kombu registers each channel's QoS for a last
restore of its unacknowledged messages at exit (a finalizer in multiprocessing's module-wide
registry), and cancels that when the channel closes. With Redis gone, closing a channel raises
halfway: the consumer's channel cannot give its messages back, and a channel with an auto-delete
fanout queue (Celery's gossip and control channels have one) raises as it deletes the queue,
before it cancels anything; kombu then stops closing the connection's other channels at the
first error. One channel left registered was enough to keep the dead transport, all its channels
and the messages they had delivered (one per task in flight at the outage) alive until the
process ended. Now a channel whose close raised lets go of all that (`Channel._let_go`), and the
transport closes every channel even when one raises (tests/test_broker_restart.py). No message
is lost: each is still in Redis's unacknowledged set, which delivers it again after the
visibility timeout unless it is acknowledged first (a turn run again repeats nothing, SPEC R10).
A task still running with one keeps its message and channel until it ends, and acknowledges it
through that channel's own Redis pool (if that fails, Celery logs it)."""

from contextlib import suppress

import redis
from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _client_of_pool = None  # (pool, client): rebuilt when the channel's pool is replaced (fork, close)

    def _create_client(self, asynchronous=False):
        if asynchronous:
            return super()._create_client(asynchronous=True)
        pool, cached = self.pool, self._client_of_pool
        if cached is None or cached[0] is not pool:
            cached = self._client_of_pool = (pool, super()._create_client())
        return cached[1]

    def close(self):
        try:
            super().close()
        except BaseException:
            self._let_go()
            raise

    def _let_go(self):
        """After a close cut short by the broken connection: nothing but this channel's own objects
        refers to it any longer, so it goes once no running task holds one of its messages."""
        self.closed = True  # closing it again could only raise again
        qos = self._qos
        if qos is not None:
            qos._on_collect.cancel()  # the exit-time restore registered for it, which held it for good
            qos._delivered.clear()  # they are in Redis's unacknowledged set: the visibility timeout gives them back
            qos._dirty.clear()
        transport = self.connection
        if transport is not None:
            for channels in (transport.channels, transport._avail_channels):
                with suppress(ValueError):
                    channels.remove(self)

    def _connparams(self, asynchronous=False):
        if self.connection.client is None:  # the transport was detached: the connection is gone
            raise redis.ConnectionError("the broker connection was closed")
        return super()._connparams(asynchronous=asynchronous)


# The timers kombu's register_with_event_loop starts on the transport's poller (`cycle`).
_CYCLE_TIMERS = ("_restore_messages_tref", "_subclient_health_tref", "_brpop_health_tref", "_reauth_tref",
                 "_binding_expiry_tref")


class Transport(kombu_redis.Transport):
    Channel = Channel
    _registered = None  # (event loop, the callbacks this transport added to its ticks)

    def register_with_event_loop(self, connection, loop):
        ticks = set(loop.on_tick)
        super().register_with_event_loop(connection, loop)
        self._registered = (loop, set(loop.on_tick) - ticks)

    def close_connection(self, connection):
        # First, as closing the channels of a broken connection can raise halfway.
        self._unregister_from_event_loop()
        # Kombu stops at the first channel whose close raises; the others stay open and registered.
        # It takes each channel off its lists before closing it, so each round gets further.
        first = None
        while True:
            try:
                super().close_connection(connection)
            except Exception as exc:  # noqa: BLE001 (raised below, once every channel is closed)
                first = first or exc
                if self.channels or self._avail_channels:
                    continue
            break
        if first is not None:
            raise first

    def _unregister_from_event_loop(self):
        registered, self._registered = self._registered, None
        if registered is not None:
            loop, callbacks = registered
            loop.on_tick.difference_update(callbacks)
        for name in _CYCLE_TIMERS:
            timer = getattr(self.cycle, name, None)
            if timer is not None:
                timer.cancel()  # the loop drops it when it comes due
