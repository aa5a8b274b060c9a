"""DB-API 2.0 connection and cursor over PyArrow Flight, with the gateway's sequences handled.

Statements: each runs at the credential's next sequence (learned from the previous statement's
FlightInfo.app_metadata, or from the caller capability ``transit.next_sequence``), one at a time
per credential in this process, and transport failures are retried with the same sequence and
SQL — which the gateway resolves to the same accepted query, never a second execution.
"""

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pyarrow as pa
import pyarrow.flight as fl

from . import errors, flightsql
from .errors import Error, OutcomeUnknownError, TRAILER

SEQUENCE_HEADER = b"x-transit-request-sequence"
NEXT_SEQUENCE_OPTION = "transit.next_sequence"


@dataclass(frozen=True)
class RetryPolicy:
    """How long a statement or read is retried after a transport failure.

    Waits start at ``initial_backoff`` seconds and double up to ``max_backoff``; no attempt starts
    after ``total`` seconds from the first. ``refreshes`` bounds how often one statement moves to
    a newer sequence after another writer of the same credential took its sequence.
    """

    # Three of the default call timeouts: a statement whose call meets its deadline is resent.
    total: float = 180.0
    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    refreshes: int = 5


class _Credential:
    """What the process knows about one credential's admission stream. The gateway admits one
    statement at a time per credential (the profile's rule: concurrent statements on one
    principal conflict), so statements on it take ``lock``."""

    def __init__(self):
        self.lock = threading.Lock()
        self.next: Optional[int] = None  # None: ask the gateway
        self.pending: Optional[tuple] = None  # (sequence, sql) whose outcome is unknown


_credentials = {}
_credentials_lock = threading.Lock()


def _credential(token: str) -> _Credential:
    # Keyed by a digest: the process keeps no second copy of the secret.
    key = hashlib.sha256(token.encode()).digest()
    with _credentials_lock:
        return _credentials.setdefault(key, _Credential())


class _TrailerCapture(fl.ClientMiddlewareFactory):
    """Hands each call's diagnostic trailer to the thread that made the call."""

    def __init__(self):
        self._local = threading.local()

    def start_call(self, info):
        middleware = _Capture()
        self._local.current = middleware
        return middleware

    def take(self):
        middleware = getattr(self._local, "current", None)
        self._local.current = None
        return middleware.trailer if middleware else None


class _Capture(fl.ClientMiddleware):
    trailer = None

    def received_headers(self, headers):
        # Called for the headers and again for the trailers; the diagnostic may be in either.
        for value in headers.get(TRAILER, []):
            self.trailer = value if isinstance(value, bytes) else value.encode()


# Outcomes the gateway recorded: the statement's sequence is spent and its answer is final.
_KNOWN = ("failed", "rejected")
# Actions of a refusal that ran nothing this time and may pass if sent again.
_RETRY_ACTIONS = {"retry_same_sequence_and_sql", "retry_later"}


def _retryable(e: Error) -> bool:
    """Failures after which the same sequence and SQL may be sent again (a replay at worst)."""
    if e.outcome in _KNOWN:
        # Recorded (an object store that refused the result, UNAVAILABLE; a rejection): the
        # sequence is spent, and every resend would only replay the same answer.
        return False
    if e.code == "admission.busy":
        # Nothing was sent. Without its trailer PyArrow reports RESOURCE_EXHAUSTED as invalid
        # argument; the gateway's code in the message still says which refusal it was.
        return True
    if e.status in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
        return True
    # A broken HTTP/2 stream surfaces as INTERNAL with neither a diagnostic nor a gateway code.
    return e.status == "INTERNAL" and e.code is None


def _not_admitted(e: Error) -> bool:
    """The gateway's word that this attempt sent nothing to the engine: the diagnostic's outcome,
    or, without a trailer, the admission limiter's code, which comes before any command."""
    return e.outcome == "not_admitted" or (e.diagnostic is None and e.code == "admission.busy")


def _not_sent(error: Error) -> Error:
    """Marks an error raised before an attempt's call could reach the gateway (no cursor, a
    closed connection): it says nothing of the statement, which was never sent."""
    error.not_sent = True
    return error


def _sequence_moved(e: Error) -> Optional[int]:
    """The sequence to move to when another writer of this credential took ours, or None.

    Only for a conflict or gap whose diagnostic says the statement was rejected (nothing of it
    ran); the number comes from the diagnostic (``next_sequence`` / ``expected_sequence``).
    """
    if e.diagnostic is None or e.outcome != "rejected":
        return None
    if e.code == "query.namespace_conflict":
        return e.facts.get("next_sequence")
    if e.code == "query.sequence_gap":
        return e.facts.get("expected_sequence")
    return None


def _unresolved(e: Error) -> bool:
    """A definite failure after which the statement may still have run, by the diagnostic's word
    (an accepted query's call cancelled, an internal error after admission). A pruned history is
    not: the sequence belongs to a forgotten statement, and nothing is resent there."""
    return e.outcome == "unknown" and e.code != "query.history_pruned"


def _unattributed(e: Error) -> bool:
    """A failure the gateway did not give (no diagnostic, no gateway code in its message): an
    edge or proxy answered — HTTP 500 (UNKNOWN), 404 (UNIMPLEMENTED), a reset — possibly after
    forwarding the statement, so whether it was admitted is unknown. The gateway's own answers,
    even without their trailer (a proxy that drops it, a starved metadata budget), start with
    their code."""
    return e.diagnostic is None and e.code is None and e.status != "UNAUTHENTICATED"


def _settled(e: Error) -> bool:
    """A definite failure of a resend that ends the credential's block: the statement failed or
    was rejected (its outcome is now known), or the gateway answered without running anything,
    so that no resend of this SQL at this sequence can learn more (the caller may no longer send
    it, the history was forgotten). A refusal that asks for a retry (compilation busy, a full
    disk, a journal out of reach) ran nothing *this* time and says nothing of the first attempt:
    the block stays."""
    if e.diagnostic is None or _retryable(e) or _unresolved(e):
        return False
    return e.outcome in _KNOWN or not (_RETRY_ACTIONS & set(e.actions))


def retrying(call, policy: RetryPolicy, reconnect=None, on_give_up=None, on_retry=None):
    """``call()`` (which raises this package's errors) retried after transport failures, with
    bounded, doubling waits; ``reconnect()`` runs before a retry that no gateway answered,
    ``on_retry(error)`` before every retry."""
    start = time.monotonic()
    wait = policy.initial_backoff
    while True:
        try:
            return call()
        except Error as e:
            if not _retryable(e):
                raise
            if on_retry is not None:
                on_retry(e)
            if time.monotonic() + wait - start > policy.total:
                final = on_give_up(e) if on_give_up is not None else e
                if final is e:
                    raise
                raise final from e
            time.sleep(wait)
            wait = min(wait * 2, policy.max_backoff)
            if reconnect is not None and e.diagnostic is None:
                reconnect()


def admit_once(credential: _Credential, sql, policy: RetryPolicy, attempt, next_sequence,
               next_after=lambda result: None):
    """Runs one statement under the credential's rules; returns (first sequence, result).

    ``attempt(sequence, sql)`` sends it once (raising this package's errors),
    ``next_sequence()`` asks the gateway (caller capability), ``next_after(result)`` reads the
    next sequence from a result when the client can (app_metadata), else None.
    """
    if not isinstance(sql, str):
        raise errors.ProgrammingError(f"a statement is a str, not {type(sql).__name__}")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as e:
        raise errors.ProgrammingError(f"the statement is not UTF-8 text: {e.reason} at {e.start}") \
            from e
    with credential.lock:
        if credential.pending is not None:
            raise OutcomeUnknownError(
                f"the statement at sequence {credential.pending[0]} on this credential has an "
                f"unknown outcome; resume() resends it", *credential.pending, None)
        refreshes = 0
        while True:
            if credential.next is None:
                credential.next = next_sequence()
            sequence = credential.next
            # Set once an attempt at this sequence got no definite answer: that attempt may have
            # been accepted, so a later refusal of a resend says nothing of whether it ran.
            unanswered = []

            def unknown(why, last):
                credential.pending = (sequence, sql)
                return OutcomeUnknownError(
                    f"statement at sequence {sequence} has an unknown outcome ({why}); "
                    f"resume() resends it", sequence, sql, last)

            def give_up(last):
                if not unanswered:
                    # Every attempt was refused before admission (admission.busy): nothing ran,
                    # and the refusal is raised as it came.
                    return last
                return unknown(f"after {policy.total:.0f}s of retries, {last.status}: {last}", last)

            def answered_or_not(e):
                # The gateway's word that nothing was sent (admission.busy) leaves no doubt.
                if not _not_admitted(e):
                    unanswered.append(e)

            try:
                result = retrying(lambda: attempt(sequence, sql), policy, on_give_up=give_up,
                                  on_retry=answered_or_not)
            except OutcomeUnknownError:
                raise
            except Error as e:
                if getattr(e, "not_sent", False) and not unanswered:
                    raise  # this statement never reached the gateway: nothing to learn or block
                if getattr(e, "after_admission", False) and not _settled(e):
                    # Admitted, its result not read (ADBC reads inside the attempt) for a reason
                    # that may pass: resume() replays it and reads again, where running the SQL
                    # anew would run it twice. A read refused for good (access revoked, the
                    # result released) is raised as it is.
                    raise unknown(f"its result could not be read, {e.status}: {e}", e) from e
                if _unresolved(e) or _unattributed(e) or (unanswered and e.outcome != "failed"):
                    raise unknown(f"{e.status}: {e}", e) from e
                moved = _sequence_moved(e)
                if moved is not None and refreshes < policy.refreshes:
                    # Another writer of this credential took the sequence before this statement's
                    # first attempt reached it: nothing of this statement ran, and every earlier
                    # one's outcome is known (else pending).
                    credential.next, refreshes = moved, refreshes + 1
                    continue
                # Whether the sequence was consumed depends on the failure: one that spent it
                # names the next (the gateway's hint, its journal at that moment; a conflict
                # moves the statement on if another writer got there first), else ask next time.
                credential.next = (e.facts.get("next_sequence")
                                   if "use_next_sequence" in e.actions else None)
                raise
            except BaseException:
                # Interrupted (KeyboardInterrupt) inside an attempt or its retries: one may have
                # been sent and admitted, so the outcome is as unknown as after a lost answer.
                credential.pending = (sequence, sql)
                raise
            credential.next = next_after(result)
            return sequence, result


def resume_pending(credential: _Credential, policy: RetryPolicy, attempt, next_after=lambda r: None,
                   read=lambda r: r):
    """Resends the credential's statement of unknown outcome (same sequence and SQL) and returns
    ``read(result)``; the credential stays blocked if the read fails (a next resume resends and
    reads again: a replay)."""
    with credential.lock:
        if credential.pending is None:
            raise errors.InterfaceError("no statement of this credential has an unknown outcome")
        sequence, sql = credential.pending
        try:
            result = retrying(lambda: attempt(sequence, sql), policy)
        except Error as e:
            if _settled(e):
                # The statement failed (now known), or its outcome can no longer be learned by
                # resending it: the history was forgotten (the history bound), the sequence holds
                # other bytes (the caller's binding changed since), or the caller may no longer
                # send it. Either way the credential is released; the error says which.
                credential.pending = None
                credential.next = (_sequence_moved(e) or e.facts.get("next_sequence")
                                   if e.outcome != "failed" else None)
            raise
        value = read(result)
        credential.pending = None
        credential.next = next_after(result)
        return value


def abandon_pending(credential: _Credential) -> tuple:
    """Releases the credential's block without learning the statement's outcome; returns its
    (sequence, sql). The next statement asks the gateway for its sequence: if the abandoned one
    ran, the journal has moved past it, and it is not run again unless the caller sends its SQL
    again."""
    with credential.lock:
        if credential.pending is None:
            raise errors.InterfaceError("no statement of this credential has an unknown outcome")
        pending, credential.pending, credential.next = credential.pending, None, None
        return pending


def _read_token(token, token_file):
    if (token is None) == (token_file is None):
        raise errors.InterfaceError("give exactly one of token= and token_file=")
    if token_file is not None:
        try:
            token = Path(token_file).read_text()
        except (OSError, UnicodeDecodeError) as e:
            # The package's exception, naming the file, never its content.
            raise errors.InterfaceError(f"token_file {token_file}: cannot read: "
                                        f"{getattr(e, 'strerror', None) or type(e).__name__}") from e
    token = token.strip()
    if not token:
        raise errors.InterfaceError("the credential is empty")
    return token


def connect(uri, token=None, token_file=None, *, tls_root_certs=None, override_hostname=None,
            disable_server_verification=False, timeout=60.0, retry=RetryPolicy()):
    """Opens a `Connection`.

    ``uri``: ``grpc://HOST:PORT`` or ``grpc+tls://HOST:PORT``. The credential is ``token`` (the
    string) or the one line of ``token_file``. TLS: ``tls_root_certs`` (PEM, bytes or str),
    ``override_hostname``, ``disable_server_verification``. ``timeout`` bounds each call in
    seconds; ``retry`` (a `RetryPolicy`) bounds retries after transport failures.
    """
    return Connection(uri, _read_token(token, token_file), tls_root_certs=tls_root_certs,
                      override_hostname=override_hostname,
                      disable_server_verification=disable_server_verification,
                      timeout=timeout, retry=retry)


class Connection:
    """A DB-API 2.0 connection. The gateway has no transactions: every statement is final once
    it returns, ``commit()`` and ``rollback()`` do nothing."""

    def __init__(self, uri, token, *, tls_root_certs=None, override_hostname=None,
                 disable_server_verification=False, timeout=60.0, retry=RetryPolicy()):
        self.uri = uri
        self.timeout = timeout
        self.retry = retry
        self._auth = (b"authorization", f"Bearer {token}".encode())
        self._credential = _credential(token)
        self._capture = _TrailerCapture()
        kwargs = {"middleware": [self._capture],
                  # A connection of its own, so a broken one is not shared with other clients.
                  "generic_options": [("grpc.use_local_subchannel_pool", 1)]}
        if tls_root_certs is not None:
            kwargs["tls_root_certs"] = tls_root_certs.encode() if isinstance(tls_root_certs, str) \
                else tls_root_certs
        if override_hostname is not None:
            kwargs["override_hostname"] = override_hostname
        if disable_server_verification:
            kwargs["disable_server_verification"] = True
        self._client_kwargs = kwargs
        self._client = self._call(lambda: fl.FlightClient(uri, **kwargs))
        self._closed = False

    # ------------------------------------------------------------------------------ DB-API

    def cursor(self) -> "Cursor":
        self._check_open()
        return Cursor(self)

    def commit(self):
        self._check_open()

    def rollback(self):
        self._check_open()

    def close(self):
        if not self._closed:
            self._closed = True
            self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------------- Arrow-native

    def execute(self, sql: str) -> pa.Table:
        """Runs ``sql`` at the credential's next sequence; returns the whole result."""
        with self.cursor() as cur:
            cur.execute(sql)
            return cur.fetch_arrow_table()

    def next_sequence(self) -> int:
        """The credential's next sequence as the gateway's journal holds it."""
        self._check_open()
        body = self._with_retry(lambda: list(self._client.do_action(
            fl.Action("GetSessionOptions", b""), self._options()))[0].body.to_pybytes())
        try:
            # An int64 on the wire; sequences are unsigned 64-bit numbers.
            return flightsql.session_options(body)[NEXT_SEQUENCE_OPTION] & (1 << 64) - 1
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise errors.InterfaceError(
                f"GetSessionOptions answered without a {NEXT_SEQUENCE_OPTION} integer") from e

    def tables(self) -> pa.Table:
        """The Tables this credential may query (catalog_name, db_schema_name, table_name,
        table_type)."""
        self._check_open()
        return self._metadata(flightsql.get_tables())

    def table_schema(self, table: str) -> pa.Schema:
        """The Arrow schema of ``table`` (its name, e.g. ``primitive``)."""
        self._check_open()
        t = self._metadata(flightsql.get_tables(table_pattern=table, include_schema=True))
        names = t.column("table_name").to_pylist()
        if table not in names:
            raise errors.NotFoundError(f"no table {table!r}", "NOT_FOUND")
        raw = t.column("table_schema")[names.index(table)].as_py()
        return pa.ipc.read_schema(pa.py_buffer(raw))

    def resume(self) -> pa.Table:
        """Resends the statement whose outcome an `OutcomeUnknownError` left unknown (same
        sequence, same SQL) and returns its result; afterwards the credential is usable again.
        If reading the result fails, the credential stays blocked and the next resume() resends
        (a replay) and reads again."""
        self._check_open()
        return resume_pending(self._credential, self.retry, self._attempt, self._next_after,
                              self._read)

    def abandon(self) -> tuple:
        """Gives up on the statement an `OutcomeUnknownError` left unknown, without resending it;
        returns its (sequence, sql) and unblocks the credential. For when `resume` cannot settle
        it (a failure that reaches the client without the gateway's diagnostic, an operator's
        word that it did or did not run); whether it ran stays unknown to this process."""
        self._check_open()
        return abandon_pending(self._credential)

    def read(self, ticket: bytes) -> pa.Table:
        """Reads a result again by its ticket (``Cursor.ticket``), e.g. after `Cursor.execute`
        admitted a statement and then failed reading it: tickets are replay-safe, and results
        are retained by the gateway until released."""
        self._check_open()
        return self._with_retry(lambda: self._read_all(fl.Ticket(ticket)))

    # ----------------------------------------------------------------------------- internal

    def _check_open(self):
        if self._closed:
            raise errors.InterfaceError("the connection is closed")

    def _options(self, sequence=None):
        headers = [self._auth]
        if sequence is not None:
            headers.append((SEQUENCE_HEADER, str(sequence).encode()))
        return fl.FlightCallOptions(headers=headers, timeout=self.timeout)

    def _call(self, fn):
        """Runs one call; raises the package's exception with the call's diagnostic."""
        self._capture.take()
        try:
            return fn()
        except (pa.ArrowException, fl.FlightError, OSError) as e:
            raise errors.translate(e, self._capture.take()) from e

    def _reconnect(self):
        # A fresh channel connects at once; the old one may sit in gRPC's reconnect backoff.
        old, self._client = self._client, self._call(
            lambda: fl.FlightClient(self.uri, **self._client_kwargs))
        old.close()

    def _with_retry(self, fn):
        return retrying(lambda: self._call(fn), self.retry, self._reconnect)

    def _attempt(self, sequence, sql) -> fl.FlightInfo:
        """One GetFlightInfo of the statement; a retry after no answer gets a fresh connection."""
        descriptor = fl.FlightDescriptor.for_command(flightsql.statement_query(sql))
        try:
            return self._call(lambda: self._client.get_flight_info(descriptor, self._options(sequence)))
        except Error as e:
            if _retryable(e) and e.diagnostic is None:
                self._reconnect()
            raise

    def _next_after(self, info: fl.FlightInfo) -> Optional[int]:
        """The sequence after a successful statement from its app_metadata; None when that is
        unreadable (the caller capability is then asked before the next statement)."""
        try:
            meta = json.loads(info.app_metadata)
            if meta.get("version") == 1:
                return int(meta["next_sequence"])
        except (ValueError, TypeError, KeyError):
            pass
        return None  # asked of the gateway before the next statement

    def _statement(self, sql):
        """Admits ``sql``; returns (its first sequence, its FlightInfo)."""
        return admit_once(self._credential, sql, self.retry, self._attempt, self.next_sequence,
                          self._next_after)

    def _read(self, info: fl.FlightInfo) -> pa.Table:
        # Tickets are replay-safe: a failed read is simply read again.
        tables = [self._with_retry(lambda: self._read_all(e.ticket)) for e in info.endpoints]
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def _read_all(self, ticket: fl.Ticket) -> pa.Table:
        reader = self._client.do_get(ticket, self._options())
        try:
            return reader.read_all()
        except BaseException:
            reader.cancel()  # the stream ends now, not when the traceback is collected
            raise

    def _metadata(self, command) -> pa.Table:
        descriptor = fl.FlightDescriptor.for_command(command)
        info = self._with_retry(lambda: self._client.get_flight_info(descriptor, self._options()))
        return self._read(info)


class _TypeGroup:
    """A PEP 249 type object: equal to every Arrow type it groups."""

    def __init__(self, *predicates):
        self._predicates = predicates

    def __eq__(self, other):
        return isinstance(other, pa.DataType) and any(p(other) for p in self._predicates)

    __hash__ = None


STRING = _TypeGroup(pa.types.is_string, pa.types.is_large_string)
BINARY = _TypeGroup(pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary)
NUMBER = _TypeGroup(pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal,
                    pa.types.is_boolean)
DATETIME = _TypeGroup(pa.types.is_temporal)
ROWID = _TypeGroup()


class Cursor:
    """A DB-API 2.0 cursor. After `execute`: ``sequence`` (the statement's first sequence),
    ``next_sequence``, ``ticket`` (FTK1 bytes) and ``correlation`` (the accepted query's)."""

    arraysize = 1

    def __init__(self, connection: Connection):
        self.connection = connection
        self._closed = False
        self._table: Optional[pa.Table] = None
        self._rows = None
        self._position = 0
        self.description = None
        self.rowcount = -1
        self.sequence = self.next_sequence = self.ticket = self.correlation = None

    def execute(self, operation, parameters=None):
        self._check_open()
        if parameters:
            raise errors.NotSupportedError("the gateway takes no statement parameters")
        # A failed statement leaves no earlier one's rows or description behind (PEP 249).
        self._table, self._rows, self._position = None, None, 0
        self.description, self.rowcount = None, -1
        self.sequence = self.next_sequence = self.ticket = self.correlation = None
        self.sequence, info = self.connection._statement(operation)
        self.ticket = info.endpoints[0].ticket.ticket
        self.correlation = flightsql.ticket_correlation(self.ticket) \
            if len(self.ticket) == flightsql.STATEMENT_TICKET_BYTES else None
        # From this statement's own answer: the credential's state may already have moved on.
        self.next_sequence = self.connection._next_after(info)
        try:
            self._set(self.connection._read(info))
        except errors.Error as e:
            # Admitted and run once; only the read failed. The error names the result, so that
            # Connection.read(e.ticket) reads it, where running the SQL again would run it twice.
            e.sequence, e.ticket = self.sequence, self.ticket
            raise
        return self

    def _set(self, table: pa.Table):
        self._table, self._rows, self._position = table, None, 0
        self.rowcount = table.num_rows
        self.description = [(f.name, f.type, None, None, None, None, f.nullable) for f in table.schema]

    def executemany(self, operation, seq_of_parameters):
        self._check_open()
        raise errors.NotSupportedError("the gateway takes no statement parameters")

    def _check_open(self):
        if self._closed:
            raise errors.InterfaceError("the cursor is closed")
        self.connection._check_open()  # PEP 249: a closed connection's cursors are unusable too

    def _all_rows(self):
        self._check_open()
        if self._table is None:
            raise errors.InterfaceError("no statement was executed")
        if self._rows is None:
            columns = [c.to_pylist() for c in self._table.columns]
            self._rows = list(zip(*columns)) if columns else []
        return self._rows

    def fetchone(self):
        rows = self._all_rows()
        if self._position >= len(rows):
            return None
        self._position += 1
        return rows[self._position - 1]

    def fetchmany(self, size=None):
        rows = self._all_rows()
        size = self.arraysize if size is None else size
        out = rows[self._position:self._position + size]
        self._position += len(out)
        return out

    def fetchall(self):
        rows = self._all_rows()
        out = rows[self._position:]
        self._position = len(rows)
        return out

    def fetch_arrow_table(self) -> pa.Table:
        self._check_open()
        if self._table is None:
            raise errors.InterfaceError("no statement was executed")
        return self._table

    def fetch_df(self):
        """The result as a pandas DataFrame (needs pandas)."""
        return self.fetch_arrow_table().to_pandas()

    def __iter__(self):
        return iter(self.fetchone, None)

    def setinputsizes(self, sizes):
        pass

    def setoutputsize(self, size, column=None):
        pass

    def close(self):
        self._closed = True
        self._table = self._rows = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
