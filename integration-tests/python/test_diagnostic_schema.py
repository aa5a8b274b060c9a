"""docs/diagnostic-v1.schema.json against what the Java encoder really emits.

The Maven build has no JSON Schema validator, so the encoder's output is produced by
``DiagnosticSamples`` (gateway-core test classes, compiled by every Maven build) and validated
here with ``jsonschema``: for every Cause, every Stage, every shortening step, the ErrorMapper's
view of every cause, and 600 generated diagnostics with up to 100 KB of raw text. The schema must
also list exactly the causes, stages, outcomes and actions the code has, and reject what the
format forbids.
"""

import copy
import os
import subprocess

import jsonschema
import pytest

from daemon import ROOT
from diagnostic_clients import SCHEMA, VALIDATOR, decode_diagnostic


@pytest.fixture(scope="module")
def samples():
    test_classes = ROOT / "gateway-core" / "target" / "test-classes"
    assert (test_classes / "io/transit/flight/diagnostic/DiagnosticSamples.class").exists(), \
        "build first: mvn -o -q -B package -DskipTests"
    classpath = os.pathsep.join([str(test_classes), str(ROOT / "gateway-core/target/classes"),
                                 str(ROOT / "gateway-server/target/lib/*")])
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    # The daemon's Logback is on this class path without its configuration, so it would log to
    # stdout; the samples are the only stdout wanted: no logging provider at all.
    out = subprocess.run([java, "-Dslf4j.provider=org.slf4j.helpers.NOP_FallbackServiceProvider", "-cp",
                          classpath, "io.transit.flight.diagnostic.DiagnosticSamples"],
                         capture_output=True, timeout=300, check=True).stdout
    lines = out.split(b"\n")
    assert lines[-1] == b""
    return [decode_diagnostic(line) for line in lines[:-1]]  # size, UTF-8, JSON, schema


def enum(*path):
    node = SCHEMA
    for p in path:
        node = node[p]
    return set(node["enum"])


def test_every_encoded_sample_validates(samples):
    assert len(samples) > 600 + 26 * 10


def test_schema_enums_match_the_code(samples):
    assert {s["cause"] for s in samples} == enum("properties", "cause")
    assert {s["stage"] for s in samples if "stage" in s} == enum("properties", "stage")
    assert {s["outcome"] for s in samples} == enum("properties", "outcome")
    assert {a for s in samples for a in s["actions"]} == enum("properties", "actions", "items")
    assert {s["status"] for s in samples} <= enum("properties", "status")
    assert {f["kind"] for s in samples for f in s["facts"]} == enum("$defs", "fact", "properties", "kind")


def test_every_shortening_form_was_validated(samples):
    facts = [f for s in samples for f in s["facts"]]
    locations = [f["location"] for f in facts if "location" in f]
    assert any(s.get("message_truncated") for s in samples)
    assert any(s.get("facts_omitted") for s in samples)
    assert any(f.get("truncated") for f in facts) and any(f.get("unavailable") for f in facts)
    assert any(l.get("path_truncated") for l in locations)
    assert any(l.get("path_unavailable") for l in locations)
    assert any(s["identity"].get("namespace") == "18446744073709551615" for s in samples)
    # Text cut where it was made: flagged, without the encoder's marker.
    assert any(f.get("truncated") and not f["value"].endswith("...[truncated]") for f in facts)
    # Step 3 keeps every number fact: a document with omitted facts still has numbers.
    assert any(s.get("facts_omitted") and sum(f["kind"] == "number" for f in s["facts"]) >= 20
               for s in samples)


def test_shared_contract_terms_were_validated(samples):
    """Witness, basis and budgets (docs/diagnostic-v1.md, "Shared-contract terms") appear in the
    encoder's output with every source, and never next to an access-class cause."""
    sources = {s["witness"]["source"] for s in samples if "witness" in s}
    assert sources == enum("properties", "witness", "properties", "source")
    assert any("basis" in s for s in samples) and any("budgets" in s for s in samples)
    assert any(s.get("facts_omitted") and "witness" in s and "basis" in s and "budgets" in s
               for s in samples), "the terms survive the last shortening step"
    mapped = [s for s in samples if s["code"].startswith("sample.") and s["message"] == "used 100%"]
    assert len(mapped) == len(enum("properties", "cause")) - 1  # UNAUTHENTICATED: fixed envelope
    for s in mapped:
        access = s["cause"] in ("UNAUTHENTICATED", "ACCESS_DENIED", "TICKET_SCOPE")
        assert all((term in s) != access for term in ("witness", "basis", "budgets")), s


def test_schema_rejects_what_the_format_forbids(samples):
    base = next(s for s in samples if any(f["kind"] == "number" for f in s["facts"])
                and any(f["kind"] == "text" for f in s["facts"]))
    number_at = next(i for i, f in enumerate(base["facts"]) if f["kind"] == "number")
    text_at = next(i for i, f in enumerate(base["facts"]) if f["kind"] == "text")

    def mutated(change):
        doc = copy.deepcopy(base)
        change(doc)
        return doc

    bad = [
        mutated(lambda d: d.pop("contract")),
        mutated(lambda d: d.update(code="Query.Bad")),
        mutated(lambda d: d["identity"].update(namespace=1)),  # u64 must be a string
        mutated(lambda d: d["identity"].update(namespace="018")),
        mutated(lambda d: d["facts"][number_at].update(truncated=True)),  # numbers stay exact
        mutated(lambda d: d["facts"][number_at].update(value="1.5")),
        mutated(lambda d: d["facts"][text_at].update(unavailable=True)),  # value and unavailable
        mutated(lambda d: d["facts"][number_at].update(location={"path": "x", "path_unavailable": True})),
        mutated(lambda d: d["actions"].extend([d["actions"][0]] if d["actions"] else ["x"])),
        mutated(lambda d: d.update(extra=1)),
        mutated(lambda d: d.update(witness={"source": "gateway"})),
        mutated(lambda d: d.update(witness={"source": "native_rejection", "native_sequence": 5})),
        mutated(lambda d: d.update(basis={"declaration_sha256": "ab" * 32, "engine": "e"})),
        mutated(lambda d: d.update(basis={"declaration_sha256": "AB" * 32, "engine": "e",
                                          "engine_version": "1"})),
        mutated(lambda d: d.update(budgets=[{"name": "nesting", "limit": 32}])),
        mutated(lambda d: d.update(budgets=[])),
    ]
    for doc in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(doc, SCHEMA, cls=type(VALIDATOR))
    VALIDATOR.validate(base)  # only the mutations make it invalid
