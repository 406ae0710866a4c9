"""Test doubles at the network boundary for outbound safety (M2).

    with ConnectionCounter() as target: ...        # a loopback port that counts the TCP connections it gets
    resolver = DnsDouble(monkeypatch, {"mcp.rebind.test": ["93.184.216.34", "127.0.0.1"]})
                                                   # socket.getaddrinfo answers the first address once,
                                                   # then the next one (a DNS rebinding), real DNS for others;
                                                   # an answer NO_ANSWER blocks the look-up until release()
    pki = TestPki(tmp_path); cert, key = pki.issue(dns=["mcp.example.test"])
    with TlsHttpServer(cert, key) as server: ...   # HTTPS on loopback, records SNI, Host and Cookie
    with_cookie(app, "session=abc", seen)         # an ASGI app that sets a cookie on every answer

Nothing of the project is replaced: the resolver double sits where the operating system would
answer, and the servers are real sockets.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

PUBLIC_ADDRESS = "93.184.216.34"  # a global address: the outbound check lets it through
NO_ANSWER = object()  # a DnsDouble answer: the look-up hangs, as with a name server that never answers
HANG_CEILING = 60.0  # a hung look-up gives up after this long even if the test never releases it


class ConnectionCounter:
    """A loopback TCP port that accepts, counts and closes connections (a private target)."""

    def __init__(self, host="127.0.0.1", port=0):
        self.count = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind((host, port))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self):
        while True:
            try:
                connection, _ = self._sock.accept()
            except OSError:
                return
            self.count += 1
            connection.close()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._sock.close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class DnsDouble:
    """`socket.getaddrinfo` for a few test names: each name gives its answers in turn (the last
    one forever after); an answer is one address, a list of them, or NO_ANSWER. Other names go to
    the real resolver. A test that makes look-ups hang calls release() when it is done."""

    def __init__(self, monkeypatch, answers: dict[str, list]):
        self.answers = {name.lower(): list(queue) for name, queue in answers.items()}
        self.asked: list[str] = []
        self.hanging = threading.Event()  # set once a look-up got NO_ANSWER
        self._released = threading.Event()
        self._real = socket.getaddrinfo
        self._lock = threading.Lock()
        monkeypatch.setattr(socket, "getaddrinfo", self)

    def release(self):
        """End every hung look-up (as a resolver failure)."""
        self._released.set()

    def __call__(self, host, port, family=0, type=0, proto=0, flags=0):
        name = (host.decode() if isinstance(host, bytes) else str(host or "")).lower().rstrip(".")
        if name not in self.answers:
            return self._real(host, port, family, type, proto, flags)
        with self._lock:
            self.asked.append(name)
            queue = self.answers[name]
            answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if answer is NO_ANSWER:
            self.hanging.set()
            self._released.wait(HANG_CEILING)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        port = int(port or 0)
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0)) if ":" in address
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
            for address in ([answer] if isinstance(answer, str) else answer)
        ]


class TestPki:
    """A certificate authority made in the test, and server certificates it signs."""

    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path):
        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Asixto test CA")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self._cert = (
            x509.CertificateBuilder().subject_name(self._name).issuer_name(self._name)
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.ca_file = directory / "ca.pem"
        self.ca_file.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def client_context(self) -> ssl.SSLContext:
        """A verifying client context that trusts this CA only."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def issue(self, *, dns=(), ips=(), label="server") -> tuple[str, str]:
        """A server certificate for these names and addresses; return (certfile, keyfile)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        names = [x509.DNSName(name) for name in dns] + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, (list(dns) + list(ips))[0])]))
            .issuer_name(self._name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        certfile, keyfile = self.directory / f"{label}.pem", self.directory / f"{label}.key"
        certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
        return str(certfile), str(keyfile)


class TlsHttpServer:
    """HTTPS on a loopback port: answers every request with `{"ok": true}` and records the
    TLS server name (SNI) and the Host header of each request."""

    def __init__(self, certfile: str, keyfile: str):
        self.server_names: list[str | None] = []
        self.hosts: list[str] = []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile, keyfile)
        context.sni_callback = lambda _sock, name, _ctx: self.server_names.append(name)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the stdlib's naming)
                owner.hosts.append(self.headers.get("Host", ""))
                body = json.dumps({"ok": True}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self):
                sock, address = self.socket.accept()
                sock.settimeout(10)
                try:
                    return context.wrap_socket(sock, server_side=True), address
                except (ssl.SSLError, OSError):
                    sock.close()  # the client refused our certificate: that is what some tests want
                    raise

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


def with_cookie(app, cookie: str, seen: list):
    """`app` that also sets `cookie` on every answer and notes each request's Cookie header."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        seen.append(dict(scope["headers"]).get(b"cookie", b"").decode())

        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie.encode())]}
            await send(message)

        return await app(scope, receive, send_with_cookie)

    return wrapped
