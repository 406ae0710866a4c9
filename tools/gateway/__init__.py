"""The gateway: the one call path from an agent (or the test console) to a tenant's tool.

    call.py      call_tool(): lookup, policy, validation, _meta, retries within one deadline,
                 classification, record
    http.py      tools/call as one POST over stateless streamable HTTP, pooled, streamed and bounded
    results.py   classify a result (G4–G6), compiled validators cached per definition
    sanitize.py  the text the model reads (G7, G8, R4)
    records.py   call records written in batches off the critical path (G9)
    storable.py  a record's values made storable (NUL, surrogates, sizes, JSON PostgreSQL refuses)
"""

from tools.gateway.call import CallContext, CallOutcome, call_tool
from tools.gateway.records import flush as flush_records

__all__ = ["CallContext", "CallOutcome", "call_tool", "flush_records"]
