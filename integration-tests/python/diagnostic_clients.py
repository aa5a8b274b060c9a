"""Client-side helpers for Diagnostic v1 checks against the real daemon.

* ``TrailerCapture``: a PyArrow ``ClientMiddleware`` factory keeping every
  ``transit-diagnostic-bin`` value the last call received, from headers or trailers.
* ``decode_diagnostic``: the trailer bytes as a dict, after checking size, UTF-8 and the JSON
  Schema in docs/diagnostic-v1.schema.json.
* ``check_message``: the grpc-message bound (printable ASCII, <= 128 bytes); ``bounded``: the
  documented bounding of a message, to compare the grpc-message with the trailer's message.
* ``variant_daemon``: a second daemon over a copy of a demo deployment with edited limits.
"""

import json
import re
import shutil
import tempfile
from pathlib import Path

import jsonschema
import pyarrow.flight as fl

from daemon import ROOT, Daemon

TRAILER = "transit-diagnostic-bin"
MARKER = "...[truncated]"
MAX_TRAILER_BYTES = 4096
MAX_MESSAGE_BYTES = 128
# Stored values of transit.demo.cells (DemoData); a failure may name only the value it is about.
HUGE = "9223372036854775000"
U64_MAX = "18446744073709551615"
INT64_MAX = "9223372036854775807"
SCHEMA = json.loads((ROOT / "docs" / "diagnostic-v1.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
# Fail at import, not per test, if the schema itself is not a valid 2020-12 schema.
jsonschema.Draft202012Validator.check_schema(SCHEMA)

# PyArrow renders a failure as "... with message: <grpc-message>[. gRPC client debug context: ...]".
_PYARROW_MESSAGE = re.compile(r"with message: (.*?)(?:\. gRPC client debug context:.*)?\Z", re.S)


class _Capture(fl.ClientMiddleware):
    def __init__(self, sink):
        self.sink = sink

    def received_headers(self, headers):
        # Called with the initial headers and again with the trailers; binary values are bytes.
        for key, values in headers.items():
            if key.lower() == TRAILER:
                self.sink.extend(v if isinstance(v, bytes) else v.encode() for v in values)


class TrailerCapture(fl.ClientMiddlewareFactory):
    """Keeps the diagnostic values of the most recent call (tests call sequentially)."""

    def __init__(self):
        self.values = []

    def start_call(self, info):
        self.values = []
        return _Capture(self.values)

    def only(self):
        """The single trailer value of the last call, or None when it carried none."""
        assert len(self.values) <= 1, f"several {TRAILER} values: {self.values!r}"
        return self.values[0] if self.values else None


def decode_diagnostic(raw: bytes) -> dict:
    """Checks the trailer bytes (size, strict UTF-8, JSON, schema) and returns the object."""
    assert isinstance(raw, bytes)
    assert len(raw) <= MAX_TRAILER_BYTES, f"trailer is {len(raw)} bytes"
    text = raw.decode("utf-8", errors="strict")
    value = json.loads(text)
    errors = sorted(VALIDATOR.iter_errors(value), key=lambda e: list(e.absolute_path))
    assert not errors, "schema violations: " + "; ".join(
        f"{list(e.absolute_path)}: {e.message}" for e in errors)
    return value


def bounded(text: str) -> str:
    """docs/status.md's grpc-message bounding (GrpcMessage.bound), written independently."""
    out, keep, limit = "", 0, 128 - len(MARKER)
    for ch in text:
        if ch == "\\":
            out += "\\\\"
        elif 0x20 <= ord(ch) <= 0x7E:
            out += ch
        else:
            out += "".join(f"\\x{b:02X}" for b in ch.encode("utf-8"))
        if len(out) <= limit:
            keep = len(out)
        if len(out) > 128:
            return out[:keep] + MARKER
    return out


def check_message(message: str) -> bool:
    """Asserts the grpc-message bound; returns whether the message says it was truncated."""
    assert all(0x20 <= ord(c) <= 0x7E for c in message), f"not printable ASCII: {message!r}"
    assert len(message.encode("ascii")) <= MAX_MESSAGE_BYTES, f"{len(message)} bytes: {message!r}"
    return message.endswith(MARKER)


def pyarrow_message(error: Exception) -> str:
    """The grpc-message inside a PyArrow Flight error's text."""
    m = _PYARROW_MESSAGE.search(str(error))
    assert m, f"no message in {error!s}"
    return m.group(1)


def ticket_message(ticket: bytes) -> bytes:
    """The Flight ``Ticket`` message (field 1, bytes) around ``ticket``, for raw gRPC DoGet."""
    n, length = len(ticket), b""
    while True:
        length += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return b"\x0a" + length + ticket


def facts(diagnostic: dict) -> dict:
    """Fact name -> fact object (names are unique in the gateway's diagnostics)."""
    return {f["name"]: f for f in diagnostic["facts"]}


def variant_daemon(base: Daemon, limits: dict) -> Daemon:
    """Starts a daemon over a copy of ``base``'s demo deployment with ``limits`` merged in.

    Only the static deployment (configuration, credentials, keys, demo data) is copied; the
    variant gets its own engine journal, so it starts at sequence 1 and never touches ``base``.
    """
    state = Path(tempfile.mkdtemp(prefix="transit-variant-"))
    for name in ("credentials", "keys", "demo-data"):
        shutil.copytree(base.state_dir / name, state / name, copy_function=shutil.copy2)
    config = json.loads((base.state_dir / "gateway.json").read_text())
    config.setdefault("limits", {}).update(limits)
    # An existing configuration keeps its own port: 0 lets the variant run beside base.
    config["listen"]["port"] = 0
    (state / "gateway.json").write_text(json.dumps(config, indent=2))
    return Daemon(state).start()


def stop_variant(daemon: Daemon) -> None:
    state = daemon.state_dir
    try:
        assert daemon.stop() == 0, "variant gateway did not exit cleanly"
    finally:
        shutil.rmtree(state, ignore_errors=True)
