"""Fair share between tenants (issue 19, M4): what lets a customer message in before its turn is
queued on the workers every tenant shares.

- Turns in flight: a tenant may have at most `Tenant.effective_turns_in_flight_limit` turns queued
  or running; a message beyond that is refused with 429 (`Retry-After`), so one tenant's flood
  (or a slow model of its own) holds at most that many of the shared worker slots.
- Messages per minute: each channel key gets a token bucket in Redis (`effective_messages_per_minute`
  tokens, refilled evenly over a minute), taken atomically by a Lua script, so a client that loops
  is refused at the door, with the seconds until its next token.
A message refused here stores nothing. A repeated `external_id` is answered with its first turn
before any limit is read (runtime/channel.py).
"""

import functools
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils.translation import gettext as _
from rest_framework.exceptions import Throttled

from runtime.models import Turn
from tenants.selectors import current_tenant

# KEYS[1] the bucket; ARGV: capacity, refill per second, now (s). Returns {allowed, seconds to wait}.
_TAKE = """
local capacity, rate, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(state[1]) or capacity, tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
local allowed, wait = 0, (1 - tokens) / rate
if tokens >= 1 then tokens, allowed, wait = tokens - 1, 1, 0 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(capacity / rate) + 60)
return {allowed, tostring(wait)}
"""
_script = None


def _take(bucket: str, per_minute: int) -> float:
    """Takes a token; 0 when there was one, else the seconds until there is."""
    global _script
    client = cache._cache.get_client(write=True)
    if _script is None:
        _script = client.register_script(_TAKE)
    allowed, wait = _script(keys=[bucket], args=[per_minute, per_minute / 60.0, time.time()], client=client)
    return 0.0 if int(allowed) else float(wait)


@functools.cache
def _in_flight_sql() -> str:
    quote = connection.ops.quote_name
    return (f"SELECT count(*) FROM (SELECT 1 FROM {quote(Turn._meta.db_table)} WHERE {quote(Turn._meta.get_field('status').column)} "
            f"IN (%s, %s) LIMIT %s) open")


def _in_flight(*, up_to: int) -> int:
    """The tenant's turns queued or running, counted up to `up_to` (all the limit needs: under a
    flood PostgreSQL stops there), in a statement written once: every message posted sends it (P4)."""
    with connection.cursor() as cursor:
        cursor.execute(_in_flight_sql(), [Turn.Status.QUEUED, Turn.Status.RUNNING, up_to])
        return cursor.fetchone()[0]


def admit_message(*, api_key_id) -> None:
    """Raise Throttled (429 with Retry-After) when the current tenant may not take one more message now."""
    tenant = current_tenant()
    limit = tenant.effective_turns_in_flight_limit
    if _in_flight(up_to=limit) >= limit:
        raise Throttled(wait=settings.ASIXTO_BUSY_RETRY_SECONDS, detail=_(
            "Too many conversations are being answered at once for this account; send the message again shortly."))
    if api_key_id is not None:
        wait = _take(f"asixto:rate:{connection.schema_name}:{api_key_id}", tenant.effective_messages_per_minute)
        if wait:
            raise Throttled(wait=math.ceil(wait), detail=_("Too many messages from this key; send the message again shortly."))
