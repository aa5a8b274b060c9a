"""A loopback TCP proxy a test can make lose answers and then cut, to play a dropped connection."""

import socket
import struct
import threading


class TcpProxy:
    """Forwards 127.0.0.1:<port> to an upstream port, one pair of sockets per connection.

    ``hold()`` stops passing upstream bytes to the client from its next request on (the server's
    answers are lost, its requests still arrive); ``cut()`` resets every open connection and passes answers again, so
    the client's next connection works.
    """

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs = []
        self._holding = False
        self._cutting = False
        self._armed = False
        self.connections = 0
        self.cuts = 0
        self._accepter = threading.Thread(target=self._accept, daemon=True)
        self._accepter.start()

    @property
    def uri(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=10)
            except OSError:
                client.close()  # the daemon is down: the client sees a refused-like close
                continue
            upstream.settimeout(None)
            with self._lock:
                self._pairs.append((client, upstream))
                self.connections += 1
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, src, dst, answers):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if answers and self._holding:
                    continue
                if not answers and self._armed:
                    # Answers are lost from the client's next request on; the request itself passes.
                    self._armed, self._holding = False, True
                dst.sendall(data)
        except OSError:
            pass
        finally:
            if not self._cutting:  # an ordinary close passes on; a cut resets instead
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

    def hold(self):
        self._armed = True

    def cut(self):
        with self._lock:
            pairs, self._pairs = self._pairs, []
            self.cuts += 1
            self._cutting = True
        sockets = [s for pair in pairs for s in pair]
        for s in sockets:
            try:
                # Linger 0: the close sends a TCP RST, as a dropped connection looks to the client.
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                # A blocked recv keeps the socket open past close(); SHUT_RD wakes it, sends nothing.
                s.shutdown(socket.SHUT_RD)
            except OSError:
                pass
        for s in sockets:
            s.close()
        with self._lock:
            self._cutting = False
        self._holding = self._armed = False

    def close(self):
        try:
            # Wakes the accept thread: on Linux close() alone leaves accept() blocked.
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        # Ended before the cut, so no connection it accepts comes after it (the bound: its
        # connect to the upstream's 10 s timeout).
        self._accepter.join(15)
        self.cut()
        assert not self._accepter.is_alive(), "the proxy's accept thread did not end"


def pending_statement(upstream_port: int, token_file, sql: str, recorded):
    """A ``transit_flight`` connection through a new TcpProxy whose statement ``sql`` ran but
    whose every answer was lost: returns (proxy, connection, the OutcomeUnknownError).
    ``recorded(sequence)`` says whether the gateway's journal holds the statement's query; it is
    awaited before the proxy is cut (new connections work), so the statement did reach the
    gateway. The caller closes both."""
    import pytest
    import transit_flight as tf
    from daemon import wait_until

    proxy = TcpProxy(upstream_port)
    try:
        # The default timeout for the warm-up: a cold daemon's first calls of each kind are slow.
        conn = tf.connect(proxy.uri, token_file=token_file)
        conn.execute("SELECT COUNT(*) FROM primitive WHERE id < 1")
        sequence = conn.next_sequence()
        # One attempt, ended by its 5 s deadline: the answer is held back, never the request.
        conn.timeout = 5
        conn.retry = tf.RetryPolicy(total=2, initial_backoff=0.2, max_backoff=0.5)
        proxy.hold()
        with pytest.raises(tf.OutcomeUnknownError) as raised:
            conn.execute(sql)
        assert raised.value.sequence == sequence
        wait_until(lambda: recorded(sequence), 30, "the held statement to reach the journal")
        proxy.cut()
        conn.timeout, conn.retry = 60.0, tf.RetryPolicy()
        return proxy, conn, raised.value
    except BaseException:
        proxy.close()
        raise
