"""Python client for the Transit Flight Gateway: DB-API 2.0 and Arrow-native calls with the
gateway's request sequences, safe retries and Diagnostic v1 errors handled for the caller."""

from .connection import (BINARY, DATETIME, NUMBER, ROWID, STRING, Connection, Cursor, RetryPolicy,
                         connect)
from .errors import (AbortedError, AlreadyExistsError, Basis, Budget, CancelledError, DataError,
                     DatabaseError, DataLossError, DeadlineExceededError, Diagnostic, Error, Fact,
                     FailedPreconditionError, IntegrityError, InterfaceError, InternalError,
                     InternalServerError, InvalidArgumentError, NotFoundError, NotSupportedError,
                     OperationalError, OutcomeUnknownError, OutOfRangeError,
                     PermissionDeniedError, ProgrammingError, ResourceExhaustedError,
                     UnauthenticatedError, UnavailableError, UnimplementedError, UnknownError,
                     Warning, Witness)

__version__ = "0.1.0"

# PEP 249 module globals. threadsafety 1: threads may share the module, not a connection (each
# thread opens its own; statements of one credential are still serialized across them).
apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"  # nominal: the gateway takes no parameters


def read_sql(sql, con, **to_pandas):
    """``sql``'s result as a pandas DataFrame; ``con`` is a `Connection`. Keyword arguments go to
    `pyarrow.Table.to_pandas` (e.g. ``types_mapper=pandas.ArrowDtype``)."""
    return con.execute(sql).to_pandas(**to_pandas)
