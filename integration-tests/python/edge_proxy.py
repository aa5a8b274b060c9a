"""A loopback gRPC edge (grpcio) in front of the daemon that passes Flight calls through as bytes
and, when armed, answers one GetFlightInfo with its own UNKNOWN after the daemon answered it: an
edge's HTTP 500 after forwarding, which carries neither the gateway's trailer nor its code."""

from concurrent import futures
import threading

import grpc

SERVICE = "/arrow.flight.protocol.FlightService/"
# The calls transit_flight makes, by kind (request and responses stay serialized bytes).
UNARY = {"GetFlightInfo", "GetSchema"}
STREAMING = {"DoGet", "DoAction", "ListActions", "ListFlights"}
# Hop-by-hop and gRPC's own headers are the channel's to set.
DROPPED = {"content-type", "te", "user-agent", "grpc-accept-encoding", "grpc-encoding",
           "grpc-timeout"}


class EdgeProxy(grpc.GenericRpcHandler):
    def __init__(self, upstream_port: int):
        self._upstream = grpc.insecure_channel(f"127.0.0.1:{upstream_port}")
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        self._server.add_generic_rpc_handlers((self,))
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._lock = threading.Lock()
        self._fail_next_statement = False
        self.failed = 0
        self._server.start()

    @property
    def uri(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def fail_next_statement(self):
        """The next GetFlightInfo is forwarded, answered by the daemon, and then failed here."""
        with self._lock:
            self._fail_next_statement = True

    def _take_failure(self) -> bool:
        with self._lock:
            armed, self._fail_next_statement = self._fail_next_statement, False
            return armed

    def service(self, details):
        name = details.method[len(SERVICE):] if details.method.startswith(SERVICE) else None
        if name in UNARY:
            forward = self._upstream.unary_unary(details.method)

            def unary(request, context):
                try:
                    answer = forward(request, metadata=_metadata(context),
                                     timeout=context.time_remaining())
                except grpc.RpcError as e:
                    _relay(e, context)
                if name == "GetFlightInfo" and self._take_failure():
                    self.failed += 1
                    context.abort(grpc.StatusCode.UNKNOWN, "edge: upstream answer lost")
                return answer
            return grpc.unary_unary_rpc_method_handler(unary)
        if name in STREAMING:
            forward = self._upstream.unary_stream(details.method)

            def streaming(request, context):
                try:
                    yield from forward(request, metadata=_metadata(context),
                                       timeout=context.time_remaining())
                except grpc.RpcError as e:
                    _relay(e, context)
            return grpc.unary_stream_rpc_method_handler(streaming)
        return None

    def close(self):
        self._server.stop(0)
        self._upstream.close()


def _metadata(context):
    return [(k, v) for k, v in context.invocation_metadata() if k not in DROPPED]


def _relay(e: grpc.RpcError, context):
    """Passes the daemon's failure on as it came: status, message and trailer."""
    context.set_trailing_metadata(e.trailing_metadata() or ())
    context.abort(e.code(), e.details() or "")
