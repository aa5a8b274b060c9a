"""ADBC Python DBAPI (Flight SQL driver 1.13.0): the Diagnostic v1 trailer arrives as an entry of
the exception's ``details`` and validates against docs/diagnostic-v1.schema.json, for failures
before any header (compile error, admission, unauthenticated) and in the middle of a DoGet stream.
"""

import adbc_driver_manager
import pytest

from calls import TRAILER
from clients import adbc_connect
from daemon import Daemon
from diagnostic_clients import bounded, decode_diagnostic, facts

SEQ = "adbc.flight.sql.rpc.call_header.x-transit-request-sequence"
NEXT = "adbc.flight.sql.session.option.transit.next_sequence"


def connect(gw, caller, token=None):
    return adbc_connect(gw.uri, token or gw.token(caller))


def fail(conn, sql, sequence=None, fetch=False):
    """Runs ``sql`` (at ``sequence``, default the next one) and returns the DBAPI error."""
    cur = conn.cursor()
    try:
        if sequence is None:
            sequence = conn.adbc_connection.get_option_int(NEXT)
        cur.adbc_statement.set_options(**{SEQ: str(sequence)})
        with pytest.raises(adbc_driver_manager.Error) as e:
            cur.execute(sql)
            if fetch:
                cur.fetch_arrow_table()
        return e.value
    finally:
        cur.close()


def diagnostic(err):
    """The checked diagnostic in ``err.details``, or None when there is none."""
    values = [bytes(v) for k, v in err.details
              if (k.decode() if isinstance(k, bytes) else k) == TRAILER]
    assert len(values) <= 1, values
    if not values:
        return None
    d = decode_diagnostic(values[0])
    # The driver's message quotes the grpc-message, the bounded "code: message".
    assert bounded(d["code"] + ": " + d["message"]) in str(err)
    return d


def test_compile_error_before_any_header(gateway):
    sql = "SELECT a FROM primitive WHERE a = '100% caf\u00e9' AND id = 515151"
    with connect(gateway, "primitive") as conn:
        err = fail(conn, sql)
        d = diagnostic(err)
        assert (d["status"], d["code"]) == ("INVALID_ARGUMENT", "query.type_mismatch")
        assert facts(d)["literal"]["value"].startswith("'100% caf")
        assert "515151" not in str(err) and sql not in str(err)
        assert gateway.token("primitive") not in str(err) + repr(d)


def test_sequence_gap_and_overflow_carry_identity(gateway):
    with connect(gateway, "primitive") as conn:
        nxt = conn.adbc_connection.get_option_int(NEXT)
        d = diagnostic(fail(conn, "SELECT SUM(a) FROM primitive", nxt + 7))
        assert (d["status"], d["code"], d["stage"]) == ("FAILED_PRECONDITION", "query.sequence_gap",
                                                        "admission")
        assert facts(d)["expected_sequence"] == {"name": "expected_sequence", "kind": "number",
                                                 "value": str(nxt)}
    with connect(gateway, "cells") as conn:
        seq = conn.adbc_connection.get_option_int(NEXT)
        d = diagnostic(fail(conn, "SELECT SUM(huge) FROM cells", seq))
        assert (d["status"], d["code"], d["stage"]) == ("OUT_OF_RANGE", "query.arithmetic_overflow",
                                                        "execution")
        assert d["identity"]["namespace"] == str(seq)


def test_doget_failure_carries_the_trailer(gateway):
    with connect(gateway, "cells") as conn:
        seq = conn.adbc_connection.get_option_int(NEXT)
        d = diagnostic(fail(conn, "SELECT bad FROM cells", seq, fetch=True))
        assert (d["status"], d["code"], d["stage"]) == ("FAILED_PRECONDITION", "query.cell_state",
                                                        "output")
        assert d["identity"]["namespace"] == str(seq)


@pytest.fixture(scope="module")
def tight(gateway):
    d = Daemon.variant(gateway, {"limits": {"rows_per_segment": 1}}).start()
    yield d
    d.close()


def test_failure_in_the_middle_of_a_doget_stream(tight):
    with connect(tight, "cells") as conn:
        seq = conn.adbc_connection.get_option_int(NEXT)
        cur = conn.cursor()
        cur.adbc_statement.set_options(**{SEQ: str(seq)})
        # Row 0 of `bad` is valid and its own segment and batch; row 1 is a missing cell. DBAPI
        # fetches read through the driver manager's reader, which keeps the error's details (the
        # raw PyArrow reader of fetch_record_batch() would give a bare OSError).
        cur.execute("SELECT bad FROM cells WHERE id < 3")
        assert cur.fetchone() is not None
        with pytest.raises(adbc_driver_manager.Error) as e:
            cur.fetchone()
        cur.close()
    d = diagnostic(e.value)
    assert (d["status"], d["code"], d["stage"]) == ("FAILED_PRECONDITION", "query.cell_state",
                                                    "output")
    assert d["identity"]["namespace"] == str(seq)
    assert facts(d)["row"]["value"] == "1"


def test_projecting_uint64_is_unimplemented_before_upload(gateway):
    with connect(gateway, "cells") as conn:
        seq = conn.adbc_connection.get_option_int(NEXT)
        cur = conn.cursor()
        cur.adbc_statement.set_options(**{SEQ: str(seq)})
        with pytest.raises(adbc_driver_manager.Error) as e:
            cur.execute("SELECT big FROM cells")
        cur.close()
        assert conn.adbc_connection.get_option_int(NEXT) == seq, "nothing was uploaded"
    d = diagnostic(e.value)
    assert (d["status"], d["code"], d["outcome"]) == ("UNIMPLEMENTED", "query.unsupported",
                                                      "not_admitted")


def test_unauthenticated_has_only_the_minimal_envelope(gateway):
    with connect(gateway, "primitive", token="tfg_" + "y" * 43) as conn:
        cur = conn.cursor()
        cur.adbc_statement.set_options(**{SEQ: "1"})
        with pytest.raises(adbc_driver_manager.Error) as e:
            cur.execute("SELECT SUM(a) FROM primitive")
        cur.close()
    d = diagnostic(e.value)
    assert (d["code"], d["cause"]) == ("auth.unauthenticated", "UNAUTHENTICATED")
    assert not d.get("identity") and not d.get("facts")
    assert ("auth.unauthenticated: a valid credential is required"
            " (a Bearer authorization header on every call)") in str(e.value)
    assert "primitive" not in str(e.value).replace("SELECT SUM(a) FROM primitive", "")
