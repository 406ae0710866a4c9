"""A fake public web on loopback for the public-sources tests (R13): a search backend that
answers `GET /search?q=…` with `{"results": [...]}` as ASIXTO_SEARCH_URL expects, an HTML page,
and a redirect. `PublicWeb.requests` lists the paths it was asked for.

    web = PublicWeb()
    with serve_asgi(web.app()) as url: ...
"""

import json
from urllib.parse import parse_qs

PAGE = b"""<html><head><title>Horario</title><style>body{color:red}</style>
<script>var secret = "not text";</script></head>
<body><h1>Horario de la biblioteca</h1><p>Abre de lunes a viernes, de 8 a 18.</p></body></html>"""


class PublicWeb:
    def __init__(self):
        self.requests: list[str] = []

    def app(self):
        async def app(scope, receive, send):
            if scope["type"] != "http":
                return
            path, query = scope["path"], parse_qs(scope.get("query_string", b"").decode())
            self.requests.append(path)
            if path == "/search":
                body = json.dumps({"results": [
                    {"title": "Biblioteca pública", "url": "https://biblioteca.example/horario",
                     "snippet": f"Resultados para {query.get('q', [''])[0]}: abre de 8 a 18."}]}).encode()
                await _send(send, 200, body, b"application/json")
            elif path == "/page":
                await _send(send, 200, PAGE, b"text/html; charset=utf-8")
            elif path == "/moved":
                await _send(send, 302, b"", b"text/plain", [(b"location", b"http://169.254.169.254/latest/")])
            else:
                await _send(send, 404, b"not found", b"text/plain")

        return app


async def _send(send, status, body, content_type, headers=()):
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})
