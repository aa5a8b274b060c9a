"""Diagnostic v1 checks (the trailer capture itself is calls.TrailerCapture / calls.seen).

* ``decode_diagnostic``: the trailer bytes as a dict, after checking size, UTF-8 and the JSON
  Schema in docs/diagnostic-v1.schema.json.
* ``check_message``: the grpc-message bound (printable ASCII, <= 128 bytes); ``bounded``: the
  documented bounding of a message, to compare the grpc-message with the trailer's message.
"""

import json

import jsonschema

from daemon import ROOT

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


def decode_diagnostic(raw: bytes | str) -> dict:
    """Checks the trailer bytes (size, strict UTF-8, JSON, schema) and returns the object; a
    client that hands the value over as text (the C consumer's JSON) is checked from its bytes."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
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


def facts(diagnostic: dict) -> dict:
    """Fact name -> fact object (names are unique in the gateway's diagnostics)."""
    return {f["name"]: f for f in diagnostic["facts"]}
