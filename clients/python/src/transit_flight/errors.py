"""Exceptions: PEP 249's hierarchy, one class per gRPC status below it, each carrying the
gateway's parsed Diagnostic v1 (docs/diagnostic-v1.md) when the call's trailer had one."""

import json
import re
from dataclasses import dataclass, field
from typing import Optional

import pyarrow as pa
import pyarrow.flight as fl

TRAILER = "transit-diagnostic-bin"
# The gateway's messages start with the diagnostic code (docs/status.md); PyArrow and ADBC
# prefix their own words.
_MESSAGE_CODE = re.compile(r"(?:^|message: |\] )([a-z0-9_]+(?:\.[a-z0-9_]+)+): ")


@dataclass(frozen=True)
class Fact:
    name: str
    kind: str  # number, digest, text, path
    value: object  # int for number facts (exact: the wire form is a decimal string)
    location: Optional[dict] = None


@dataclass(frozen=True)
class Witness:
    """What the component that first refused the statement recorded (``source``: compiler,
    native_rejection or native_failure); fields it did not record are None."""
    source: str
    stage: Optional[str] = None
    code: Optional[str] = None
    native_sequence: Optional[int] = None
    correlation: Optional[int] = None
    command_sha256: Optional[str] = None


@dataclass(frozen=True)
class Basis:
    """What the statement was compiled against: the Table declaration fingerprint (hex, as FTK1
    tickets carry it) and the engine build."""
    declaration_sha256: Optional[str]
    engine: Optional[str]
    engine_version: Optional[str]


@dataclass(frozen=True)
class Budget:
    """A bound the failure is about: its exact limit and, when measured, what was required."""
    name: str
    limit: int
    required: Optional[int] = None


def _int(v):
    return None if v is None else int(v)


@dataclass(frozen=True)
class Diagnostic:
    """A parsed ``transit.diagnostic.v1`` trailer."""

    code: str
    status: str
    cause: str
    message: str
    outcome: str
    stage: Optional[str]
    identity: dict
    facts: tuple
    actions: tuple
    truncated: bool
    raw: dict = field(repr=False, compare=False)
    # The shared-contract terms (docs/diagnostic-v1.md): None / () when the trailer has none.
    witness: Optional[Witness] = None
    basis: Optional[Basis] = None
    budgets: tuple = ()

    @classmethod
    def parse(cls, data) -> Optional["Diagnostic"]:
        """The diagnostic in ``data`` (trailer bytes), or None when absent, of another contract
        or not of the contract's shape (the error then carries only its status and message)."""
        if not data:
            return None
        try:
            d = json.loads(data)
        except ValueError:
            return None
        if not isinstance(d, dict) or d.get("contract") != "transit.diagnostic.v1":
            return None
        try:
            return cls._of(d)
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    @classmethod
    def _of(cls, d: dict) -> "Diagnostic":
        facts = tuple(Fact(f["name"], f["kind"],
                           int(f["value"]) if f["kind"] == "number" and "value" in f else f.get("value"),
                           f.get("location")) for f in d.get("facts", []))
        identity = {k: int(v) for k, v in d.get("identity", {}).items()}
        w, b = d.get("witness"), d.get("basis")
        witness = Witness(w["source"], w.get("stage"), w.get("code"),
                          _int(w.get("native_sequence")), _int(w.get("correlation")),
                          w.get("command_sha256")) if isinstance(w, dict) and "source" in w else None
        basis = Basis(b.get("declaration_sha256"), b.get("engine"),
                      b.get("engine_version")) if isinstance(b, dict) else None
        budgets = tuple(Budget(x["name"], int(x["limit"]), _int(x.get("required")))
                        for x in d.get("budgets", []))
        return cls(d["code"], d["status"], d["cause"], d.get("message", ""), d.get("outcome", ""),
                   d.get("stage"), identity, facts, tuple(d.get("actions", [])),
                   bool(d.get("truncated")), d, witness, basis, budgets)

    def fact(self, name, default=None):
        for f in self.facts:
            if f.name == name:
                return f.value
        return default


class Warning(Exception):  # noqa: A001 - the name PEP 249 prescribes
    pass


class Error(Exception):
    """Base of every error this package raises (PEP 249).

    ``status`` is the exact gRPC status name (from the diagnostic when there is one: PyArrow folds
    several statuses into one exception class), ``diagnostic`` the parsed trailer or None.
    """

    status: Optional[str] = None

    def __init__(self, message, status=None, diagnostic: Optional[Diagnostic] = None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.diagnostic = diagnostic

    @property
    def code(self):
        """The diagnostic code; without a trailer, the one the gateway's message starts with."""
        if self.diagnostic:
            return self.diagnostic.code
        m = _MESSAGE_CODE.search(self.message)
        return m.group(1) if m else None

    @property
    def cause(self):
        return self.diagnostic.cause if self.diagnostic else None

    @property
    def outcome(self):
        return self.diagnostic.outcome if self.diagnostic else None

    @property
    def facts(self) -> dict:
        return {f.name: f.value for f in self.diagnostic.facts} if self.diagnostic else {}

    @property
    def actions(self) -> tuple:
        return self.diagnostic.actions if self.diagnostic else ()

    @property
    def witness(self) -> Optional[Witness]:
        return self.diagnostic.witness if self.diagnostic else None

    @property
    def basis(self) -> Optional[Basis]:
        return self.diagnostic.basis if self.diagnostic else None

    @property
    def budgets(self) -> tuple:
        return self.diagnostic.budgets if self.diagnostic else ()


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class DataError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class InternalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


# One class per gRPC status the gateway answers (docs/status.md), under the PEP 249 class that
# says what the caller can do about it.
class CancelledError(OperationalError):
    status = "CANCELLED"


class UnknownError(InternalError):
    status = "UNKNOWN"


class InvalidArgumentError(ProgrammingError):
    status = "INVALID_ARGUMENT"


class DeadlineExceededError(OperationalError):
    status = "DEADLINE_EXCEEDED"


class NotFoundError(ProgrammingError):
    status = "NOT_FOUND"


class AlreadyExistsError(IntegrityError):
    status = "ALREADY_EXISTS"


class PermissionDeniedError(OperationalError):
    status = "PERMISSION_DENIED"


class ResourceExhaustedError(OperationalError):
    status = "RESOURCE_EXHAUSTED"


class FailedPreconditionError(OperationalError):
    status = "FAILED_PRECONDITION"


class AbortedError(IntegrityError):
    status = "ABORTED"


class OutOfRangeError(DataError):
    status = "OUT_OF_RANGE"


class UnimplementedError(NotSupportedError):
    status = "UNIMPLEMENTED"


class InternalServerError(InternalError):
    status = "INTERNAL"


class UnavailableError(OperationalError):
    status = "UNAVAILABLE"


class DataLossError(DataError):
    status = "DATA_LOSS"


class UnauthenticatedError(OperationalError):
    status = "UNAUTHENTICATED"


class OutcomeUnknownError(OperationalError):
    """Retries ran out while it was unknown whether the statement was admitted.

    Nothing ran twice, but the statement may run (or have run) once. The credential's next
    statement is refused until `Connection.resume()` resends this one (same ``sequence``, same
    ``sql``: a replay if it was admitted) and so learns its outcome.
    """

    def __init__(self, message, sequence, sql, last: Optional[Error]):
        super().__init__(message, last.status if last else None, last.diagnostic if last else None)
        self.sequence, self.sql, self.last = sequence, sql, last

    # The last failure's diagnostic stays readable (``.diagnostic``, ``.last``), but what it says
    # of the outcome and what to do is about that one answer, not the statement: a resend's
    # conflict says "rejected, use the next sequence" of a statement that may have run.
    @property
    def outcome(self):
        return "unknown"

    @property
    def actions(self) -> tuple:
        return ()


BY_STATUS = {c.status: c for c in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
    AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError, FailedPreconditionError,
    AbortedError, OutOfRangeError, UnimplementedError, InternalServerError, UnavailableError,
    DataLossError, UnauthenticatedError)}

# PyArrow's class for a status when no diagnostic names it exactly (most specific first).
_PYARROW_STATUS = (
    (fl.FlightUnauthenticatedError, "UNAUTHENTICATED"),
    (fl.FlightUnauthorizedError, "PERMISSION_DENIED"),
    (fl.FlightTimedOutError, "DEADLINE_EXCEEDED"),
    (fl.FlightCancelledError, "CANCELLED"),
    (fl.FlightUnavailableError, "UNAVAILABLE"),
    (fl.FlightInternalError, "INTERNAL"),
    (pa.ArrowNotImplementedError, "UNIMPLEMENTED"),
    (pa.ArrowInvalid, "INVALID_ARGUMENT"),
    (pa.ArrowKeyError, "NOT_FOUND"),
    (pa.ArrowIndexError, "OUT_OF_RANGE"),
)


def translate(exc: BaseException, trailer=None) -> Error:
    """The package's exception for a PyArrow failure and the trailer bytes its call received."""
    diagnostic = Diagnostic.parse(trailer)
    if diagnostic is not None:
        status = diagnostic.status
    else:
        status = next((s for cls, s in _PYARROW_STATUS if isinstance(exc, cls)), "UNKNOWN")
    return BY_STATUS.get(status, UnknownError)(str(exc), status, diagnostic)
