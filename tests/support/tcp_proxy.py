"""A TCP proxy on loopback that a test can take down and bring back, to make a real service
(PostgreSQL, Redis) unreachable for a process and reachable again without touching the service:

    with TcpProxy(5432) as proxy:        # proxy.port forwards to 127.0.0.1:5432
        proxy.down()                     # live connections cut, new ones closed at once
        proxy.up()                       # forwarding again

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
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket):
        try:
            while data := source.recv(65536):
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
