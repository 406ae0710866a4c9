"""The Celery broker's transport when the broker is Redis: kombu's own, with one Redis client per
channel (and connection pool) instead of a new one for every message it delivers and every
acknowledgement. kombu builds a fresh `redis.Redis` for each, and redis-py fills a few hundred
response callbacks into every new client: about a tenth of a worker's CPU per turn (P4). The
client is safe to share between threads: each command takes a connection from the pool."""

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


class Transport(kombu_redis.Transport):
    Channel = Channel
