"""The same sequence, retry and diagnostic rules for ADBC (Python DBAPI) connections.

ADBC cannot read FlightInfo.app_metadata, so each statement's sequence comes from the caller
capability ``transit.next_sequence``; each attempt uses a fresh cursor (setting the sequence
call-header option twice on one statement would send two values).
"""

import weakref
from pathlib import Path

import adbc_driver_flightsql.dbapi as flight_sql
from adbc_driver_flightsql import DatabaseOptions
import adbc_driver_manager
import pyarrow as pa

from . import errors
from .connection import (RetryPolicy, _credential, _not_sent, _read_token, abandon_pending,
                         admit_once, resume_pending, retrying)

SEQUENCE_OPTION = "adbc.flight.sql.rpc.call_header.x-transit-request-sequence"
NEXT_SEQUENCE_OPTION = "adbc.flight.sql.session.option.transit.next_sequence"

# ADBC's status when no diagnostic names the gRPC status exactly (the driver's own mapping).
_ADBC_STATUS = {
    adbc_driver_manager.AdbcStatusCode.IO: "UNAVAILABLE",
    adbc_driver_manager.AdbcStatusCode.TIMEOUT: "DEADLINE_EXCEEDED",
    adbc_driver_manager.AdbcStatusCode.UNAUTHENTICATED: "UNAUTHENTICATED",
    adbc_driver_manager.AdbcStatusCode.UNAUTHORIZED: "PERMISSION_DENIED",
    adbc_driver_manager.AdbcStatusCode.NOT_IMPLEMENTED: "UNIMPLEMENTED",
    adbc_driver_manager.AdbcStatusCode.INVALID_ARGUMENT: "INVALID_ARGUMENT",
    adbc_driver_manager.AdbcStatusCode.NOT_FOUND: "NOT_FOUND",
    adbc_driver_manager.AdbcStatusCode.CANCELLED: "CANCELLED",
    adbc_driver_manager.AdbcStatusCode.INTERNAL: "INTERNAL",
}

# Which credential each connection made by connect() carries (for the per-credential lock).
_credentials = weakref.WeakKeyDictionary()


def translate(exc: adbc_driver_manager.Error) -> errors.Error:
    """The package's exception for an ADBC error; its diagnostic is an entry of ``details``."""
    details = {k.decode() if isinstance(k, bytes) else k: v for k, v in (exc.details or [])}
    diagnostic = errors.Diagnostic.parse(details.get(errors.TRAILER))
    status = diagnostic.status if diagnostic else _ADBC_STATUS.get(exc.status_code, "UNKNOWN")
    return errors.BY_STATUS.get(status, errors.UnknownError)(str(exc), status, diagnostic)


def connect(uri, token=None, token_file=None, *, tls_root_certs=None, override_hostname=None,
            timeout=60.0):
    """An ADBC DBAPI connection to the gateway with the credential (``autocommit=True``: the
    gateway has no transactions). Use it with `execute` and `resume`. ``timeout`` bounds each
    call in seconds, as `transit_flight.connect`'s does: a connection that stops answering ends
    the attempt with DEADLINE_EXCEEDED, which the retry rules resend, instead of holding the
    credential's lock for good."""
    token = _read_token(token, token_file)
    db_kwargs = {"adbc.flight.sql.authorization_header": f"Bearer {token}"}
    for option in (DatabaseOptions.TIMEOUT_QUERY, DatabaseOptions.TIMEOUT_FETCH,
                   DatabaseOptions.TIMEOUT_UPDATE):
        db_kwargs[option.value] = str(float(timeout))
    if tls_root_certs is not None:
        db_kwargs["adbc.flight.sql.client_option.tls_root_certs"] = \
            tls_root_certs.decode() if isinstance(tls_root_certs, bytes) else tls_root_certs
    if override_hostname is not None:
        db_kwargs["adbc.flight.sql.client_option.tls_override_hostname"] = override_hostname
    conn = _call(lambda: flight_sql.connect(uri, db_kwargs=db_kwargs, autocommit=True))
    _credentials[conn] = _credential(token)
    return conn


def _call(fn):
    try:
        return fn()
    except adbc_driver_manager.Error as e:
        raise translate(e) from e


def _rules(conn):
    try:
        return _credentials[conn]
    except KeyError:
        raise errors.InterfaceError("use a connection from transit_flight.adbc.connect") from None


def _attempt(conn):
    def attempt(sequence, sql) -> pa.Table:
        try:
            cur = conn.cursor()  # a fresh statement: the call header is set once
        except Exception as e:  # a closed connection: nothing was sent
            raise _not_sent(errors.InterfaceError(f"the connection cannot open a statement: {e}")) \
                from e
        with cur:
            try:
                cur.adbc_statement.set_options(**{SEQUENCE_OPTION: str(sequence)})
            except Exception as e:
                raise _not_sent(errors.InterfaceError(
                    f"the statement's sequence option was refused: {e}")) from e
            _call(lambda: cur.execute(sql))
            try:
                return _call(cur.fetch_arrow_table)
            except errors.Error as e:
                # The statement was admitted; only its read failed. A retried read resends the
                # statement (a replay); one that is not retried leaves it pending for resume().
                e.after_admission = True
                raise
    return attempt


def next_sequence(conn, retry=RetryPolicy()) -> int:
    """The credential's next sequence (the caller capability), retried after transport failures
    as reads are: every ADBC statement asks it first."""
    option = conn.adbc_connection.get_option_int
    # ADBC reads the option as a signed 64-bit integer; sequences are unsigned.
    return retrying(lambda: _call(lambda: option(NEXT_SEQUENCE_OPTION)), retry) & ((1 << 64) - 1)


def execute(conn, sql, retry=RetryPolicy()) -> pa.Table:
    """Runs ``sql`` on ``conn`` at the credential's next sequence, with the package's retry rules
    (docs/python-client.md); returns the result."""
    return admit_once(_rules(conn), sql, retry, _attempt(conn),
                      lambda: next_sequence(conn, retry))[1]


def resume(conn, retry=RetryPolicy()) -> pa.Table:
    """Resends the credential's statement of unknown outcome; returns its result."""
    return resume_pending(_rules(conn), retry, _attempt(conn))


def abandon(conn) -> tuple:
    """Gives up on the credential's statement of unknown outcome without resending it; returns
    its (sequence, sql) (`transit_flight.Connection.abandon`)."""
    return abandon_pending(_rules(conn))
