"""docs/vectors/ftk1.json checked from the file alone with an independent Ed25519 (the
`cryptography` package, OpenSSL underneath) and an FTK1 reader written here from docs/tickets.md:
every valid vector verifies and decodes to its recorded fields, and every reject fails with its
recorded code, checked in the documented order."""

import hashlib
import json
import struct
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (Ed25519PrivateKey,
                                                               Ed25519PublicKey)

VECTORS = json.loads((Path(__file__).resolve().parents[2] / "docs" / "vectors" / "ftk1.json")
                     .read_text())
# Group order of Ed25519: the malleated vector's S must be at or above it.
L = 2**252 + 27742317777372353535851937790883648493
MIN, MAX, MAX_COMMAND = 244, 1263, 1019
SCOPE_FIELDS = ["realm", "principal", "service", "binding_revision", "ingress", "requests",
                "source", "resource"]


class Refused(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


def public_key():
    return Ed25519PublicKey.from_public_bytes(bytes.fromhex(VECTORS["ticket_public_key_hex"]))


def signature_verifies(ticket: bytes) -> bool:
    if len(ticket) < 64:
        return False
    # OpenSSL refuses S >= L itself (RFC 8032 section 5.1.7), so no check of ours is needed.
    body, sig = ticket[:-64], ticket[-64:]
    digest = hashlib.sha256(VECTORS["signature_domain"].encode() + b"\0" + body).digest()
    try:
        public_key().verify(sig, digest)
        return True
    except InvalidSignature:
        return False


def verify(ticket: bytes, scope: dict) -> dict:
    """FTK1 verification in the order docs/tickets.md gives; raises Refused(code)."""
    if not MIN <= len(ticket) <= MAX:
        raise Refused("ticket.size")
    tag = ticket[145]
    fields = {"tag": tag}
    if tag == 1:
        if len(ticket) != 250:
            raise Refused("ticket.layout")
        fields["correlation"] = str(struct.unpack_from("<Q", ticket, 146)[0])
        fields["manifest_sha256_hex"] = ticket[154:186].hex()
    elif tag == 2:
        (n,) = struct.unpack_from("<H", ticket, 146)
        if n > MAX_COMMAND or len(ticket) != 244 + n:
            raise Refused("ticket.layout")
        fields["command_length"] = n
        fields["command_hex"] = ticket[148:148 + n].hex()
        fields["result_sha256_hex"] = ticket[148 + n:180 + n].hex()
    else:
        raise Refused("ticket.layout")
    flag, role = ticket[96], struct.unpack_from("<Q", ticket, 97)[0]
    if flag > 1 or (flag == 0 and role != 0):
        raise Refused("ticket.layout")
    if ticket[:32].hex() != VECTORS["definition"]["digest_hex"]:
        raise Refused("ticket.definition")
    if not signature_verifies(ticket):
        raise Refused("ticket.signature")
    (expiry,) = struct.unpack_from("<Q", ticket, 137)
    if int(VECTORS["verification"]["clock_unix_ms"]) >= expiry:
        raise Refused("ticket.expired")
    values = struct.unpack_from("<8Q", ticket, 32)
    for name, value in zip(SCOPE_FIELDS, values):
        fields[name] = str(value)
    fields["has_role"], fields["role"] = flag == 1, str(role)
    if any(fields[k] != scope[k] for k in SCOPE_FIELDS + ["role"]) or fields["has_role"] != scope["has_role"]:
        raise Refused("ticket.scope")
    if ticket[105:137].hex() != VECTORS["verification"]["declaration_sha256_hex"]:
        raise Refused("ticket.declaration")
    fields.update(definition_hex=ticket[:32].hex(), declaration_sha256_hex=ticket[105:137].hex(),
                  expiry_unix_ms=str(expiry), signature_hex=ticket[-64:].hex())
    return fields


def cases(valid):
    return [pytest.param(c, id=c["name"]) for c in VECTORS["cases"] if c["valid"] == valid]


def test_definition_digest_and_key_pair_from_the_file():
    d = VECTORS["definition"]
    encoding = bytes.fromhex(d["encoding_hex"])
    name = d["realm_name"].encode()
    assert encoding == (struct.pack("<H", len(name)) + name
                        + struct.pack("<QQ", int(d["realm_id"]), int(d["service_id"]))
                        + struct.pack("<H", 4) + d["contract_version"].encode())
    assert hashlib.sha256(d["domain"].encode() + b"\0" + encoding).hexdigest() == d["digest_hex"]
    private = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(VECTORS["ticket_key_seed_hex"]))
    assert private.public_key().public_bytes_raw().hex() == VECTORS["ticket_public_key_hex"]


@pytest.mark.parametrize("case", cases(True))
def test_valid_vector_verifies_with_an_independent_ed25519(case):
    ticket = bytes.fromhex(case["ticket_hex"])
    assert len(ticket) == case["size"]
    fields = verify(ticket, VECTORS["verification"]["scopes"][case["verify_as"]])
    assert fields == case["fields"]
    # Deterministic signatures: the seed re-creates the exact bytes.
    private = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(VECTORS["ticket_key_seed_hex"]))
    digest = hashlib.sha256(VECTORS["signature_domain"].encode() + b"\0" + ticket[:-64]).digest()
    assert private.sign(digest) == ticket[-64:]


@pytest.mark.parametrize("case", cases(False))
def test_reject_vector_fails_with_its_recorded_code(case):
    ticket = bytes.fromhex(case["ticket_hex"])
    assert signature_verifies(ticket) == case["signature_verifies"]
    with pytest.raises(Refused) as refused:
        verify(ticket, VECTORS["verification"]["scopes"][case["verify_as"]])
    assert refused.value.code == case["expected"]["code"]


def test_vectors_cover_the_required_shapes():
    valid = [c for c in VECTORS["cases"] if c["valid"]]
    assert {c["fields"]["tag"] for c in valid} == {1, 2}
    assert {c["fields"]["has_role"] for c in valid} == {True, False}
    assert {c["size"] for c in valid} >= {244, 250, MAX}
    codes = {c["expected"]["code"] for c in VECTORS["cases"] if not c["valid"]}
    assert codes >= {"ticket.size", "ticket.layout", "ticket.definition", "ticket.signature",
                     "ticket.expired"}
    malleated = next(c for c in VECTORS["cases"] if c["name"] == "malleated_signature_s_plus_l")
    assert int.from_bytes(bytes.fromhex(malleated["ticket_hex"])[-32:], "little") >= L
