"""A TCP proxy on loopback that a test can take down and bring back, to make a real service
(PostgreSQL, Redis) unreachable for a process and reachable again without touching the service:

    with TcpProxy(5432) as proxy:        # proxy.port forwards to 127.0.0.1:5432
        proxy.down()                     # live connections cut, new ones closed at once
        proxy.up()                       # forwarding again
        cut = proxy.cut_when(b"needle")  # the next answer of the service holding b"needle" is
                                         # dropped and the proxy goes down (cut.set()): an
                                         # answer lost in a restart

The port stays the same throughout (the listening socket is never closed), so a process pointed
at it finds the service again by itself."""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1"):
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._live: set[socket.socket] = set()
        self._up = True
        self._closed = False
        self._needle: tuple[bytes, threading.Event] | None = None

    def __enter__(self):
        threading.Thread(target=self._accept, daemon=True, name=f"tcp-proxy-{self.port}").start()
        return self

    def __exit__(self, *exc):
        self._closed = True
        self._listener.close()
        self.down()

    def down(self):
        with self._lock:
            self._up = False
            live, self._live = self._live, set()
        for sock in live:
            _close(sock)

    def up(self):
        with self._lock:
            self._up = True

    def cut_when(self, needle: bytes) -> threading.Event:
        cut = threading.Event()
        with self._lock:
            self._needle = (needle, cut)
        return cut

    def _lost(self, seen: bytes) -> bool:
        """Whether these bytes from the service are the answer to lose (then the proxy is down)."""
        with self._lock:
            if self._needle is None or self._needle[0] not in seen:
                return False
            cut, self._needle = self._needle[1], None
        self.down()
        cut.set()
        return True

    def _accept(self):
        while not self._closed:
            try:
                client, _address = self._listener.accept()
            except OSError:
                return
            with self._lock:
                up = self._up
            if not up:
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._live.update((client, upstream))
            for source, sink, answers in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(target=self._pump, args=(source, sink, answers), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, answers: bool):
        tail = b""  # the end of the previous chunk: a needle may straddle two
        try:
            while data := source.recv(65536):
                needle = self._needle
                if answers and needle is not None:
                    if self._lost(tail + data):
                        return
                    tail = data[-len(needle[0]):]
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._live.discard(source)
                self._live.discard(sink)
            _close(source)
            _close(sink)


def _close(sock: socket.socket):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
