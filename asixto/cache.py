"""The shared cache's serializer: JSON and raw bytes, never pickle (issue 19, H1).

Django's Redis cache pickles every value by default, so anyone who can write a key in Redis
(a leaked password, a process on the machine that reaches it) runs code in every web and worker
process that reads that key. Values here are integers (stored bare, as Django does, so `incr`
stays atomic), bytes (a `b` tag, then the bytes) or anything JSON can hold (a `j` tag, then
UTF-8 JSON: tuples come back as lists). A value in any other form, such as a pickle left by an
older release, is never deserialized: it reads as a miss (None).
"""

import json

BYTES, JSON = b"b", b"j"


class Serializer:
    def dumps(self, obj):
        if type(obj) is int:
            return obj
        if isinstance(obj, bytes | bytearray | memoryview):
            return BYTES + bytes(obj)
        return JSON + json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()

    def loads(self, data):
        try:
            return int(data)
        except ValueError:
            pass
        tag, body = data[:1], data[1:]
        if tag == BYTES:
            return bytes(body)
        if tag == JSON:
            try:
                return json.loads(body)
            except ValueError:
                return None
        return None
