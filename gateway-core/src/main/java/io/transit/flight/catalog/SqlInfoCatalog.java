package io.transit.flight.catalog;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.arrow.flight.FlightProducer.ServerStreamListener;
import org.apache.arrow.flight.sql.SqlInfoBuilder;
import org.apache.arrow.flight.sql.impl.FlightSql.SqlInfo;
import org.apache.arrow.flight.sql.impl.FlightSql.SqlSupportedCaseSensitivity;
import org.apache.arrow.flight.sql.impl.FlightSql.SqlSupportedTransaction;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.UInt4Vector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.DenseUnionVector;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.message.IpcOption;

/**
 * The gateway's GetSqlInfo answers, encoded with Flight SQL's standard dense-union schema by
 * Arrow's {@link SqlInfoBuilder}. Only ids listed in {@link #SUPPORTED} are answered; a request
 * naming any other id fails as a whole (UNIMPLEMENTED, naming the id) rather than silently
 * omitting it. No SQL type or capability the gateway does not implement is advertised.
 */
public final class SqlInfoCatalog {
  /** The ids answered, in the order an empty request returns them. */
  public static final Set<Integer> SUPPORTED = Set.of(
      SqlInfo.FLIGHT_SQL_SERVER_NAME_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_VERSION_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_ARROW_VERSION_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_READ_ONLY_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_SQL_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_SUBSTRAIT_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_SUBSTRAIT_MIN_VERSION_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_SUBSTRAIT_MAX_VERSION_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_TRANSACTION_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_CANCEL_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_BULK_INGESTION_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_INGEST_TRANSACTIONS_SUPPORTED_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_STATEMENT_TIMEOUT_VALUE,
      SqlInfo.FLIGHT_SQL_SERVER_TRANSACTION_TIMEOUT_VALUE,
      SqlInfo.SQL_IDENTIFIER_CASE_VALUE,
      SqlInfo.SQL_IDENTIFIER_QUOTE_CHAR_VALUE,
      SqlInfo.SQL_SEARCH_STRING_ESCAPE_VALUE);

  private final String serverVersion;
  private final String arrowVersion;

  public SqlInfoCatalog(String serverVersion, String arrowVersion) {
    this.serverVersion = serverVersion;
    this.arrowVersion = arrowVersion;
  }

  /**
   * The version of the Arrow Flight jar this process actually loaded (its Maven
   * {@code pom.properties}, else its manifest), so SqlInfo cannot drift from the build.
   *
   * @throws IllegalStateException when the loaded jar names no version
   */
  public static String runningArrowVersion() {
    Class<?> flight = org.apache.arrow.flight.FlightServer.class;
    try (var in = flight.getResourceAsStream(
        "/META-INF/maven/org.apache.arrow/flight-core/pom.properties")) {
      if (in != null) {
        java.util.Properties p = new java.util.Properties();
        p.load(in);
        String v = p.getProperty("version");
        if (v != null && !v.isBlank()) {
          return v;
        }
      }
    } catch (IOException e) {
      // fall through to the manifest
    }
    String v = flight.getPackage().getImplementationVersion();
    if (v == null || v.isBlank()) {
      throw new IllegalStateException("the loaded Arrow Flight jar names no version");
    }
    return v;
  }

  /**
   * The finite encoded result (an Arrow IPC stream) for the requested ids; an empty list means
   * every supported id. Deterministic: the same request gives the same bytes.
   */
  public byte[] encode(List<Integer> requested) {
    List<Integer> ids = new ArrayList<>();
    if (requested.isEmpty()) {
      ids.addAll(new TreeSet<>(SUPPORTED));
    } else {
      for (Integer id : requested) {
        if (!SUPPORTED.contains(id)) {
          // The field is a protobuf uint32, read by Java into an int: named as the caller sent it.
          long sent = Integer.toUnsignedLong(id);
          throw GatewayException.of(Cause.UNSUPPORTED, "catalog.sql_info_unsupported",
              "SqlInfo id " + sent + " is not supported by this gateway")
              .with("info_id", sent);
        }
        ids.add(id);
      }
    }
    SqlInfoBuilder builder = new SqlInfoBuilder()
        .withFlightSqlServerName("Transit Flight Gateway")
        .withFlightSqlServerVersion(serverVersion)
        .withFlightSqlServerArrowVersion(arrowVersion)
        .withFlightSqlServerReadOnly(true)
        .withFlightSqlServerSql(true)
        .withFlightSqlServerSubstrait(false)
        // Null, as FlightSql.proto defines them without Substrait (Capture.putNext); refusing
        // them failed a whole request, and ADBC's get_info then answered its own defaults.
        .withFlightSqlServerSubstraitMinVersion("")
        .withFlightSqlServerSubstraitMaxVersion("")
        .withFlightSqlServerTransaction(SqlSupportedTransaction.SQL_SUPPORTED_TRANSACTION_NONE)
        .withFlightSqlServerCancel(false)
        .withFlightSqlServerBulkIngestion(false)
        .withFlightSqlServerBulkIngestionTransaction(false)
        .withFlightSqlServerStatementTimeout(0)
        .withFlightSqlServerTransactionTimeout(0)
        .withSqlIdentifierCase(SqlSupportedCaseSensitivity.SQL_CASE_SENSITIVITY_CASE_INSENSITIVE)
        .withSqlIdentifierQuoteChar("\"")
        // The catalog filters' escape (CatalogResults.likeMatches): a client can ask for it.
        .withSqlSearchStringEscape("\\");
    Capture capture = new Capture();
    builder.send(ids, capture);
    if (capture.failure != null) {
      throw GatewayException.of(Cause.INTERNAL, "catalog.sql_info", "SqlInfo encoding failed");
    }
    return capture.bytes.toByteArray();
  }

  /**
   * Receives SqlInfoBuilder's single batch on the calling thread and serializes it to IPC bytes
   * before the builder frees its root (the builder owns the root throughout).
   */
  private static final class Capture implements ServerStreamListener {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private VectorSchemaRoot root;
    private Throwable failure;

    @Override
    public void start(VectorSchemaRoot root, DictionaryProvider dictionaries, IpcOption option) {
      this.root = root;
    }

    @Override
    public void putNext() {
      nullSubstraitVersions();
      try (ArrowStreamWriter writer = new ArrowStreamWriter(root, null, bytes)) {
        writer.start();
        writer.writeBatch();
        writer.end();
      } catch (IOException e) {
        failure = e;
      }
    }

    /**
     * The Substrait version ids hold a null string: the builder writes only values, so their
     * string is made null in the union's string child, where the builder put it.
     */
    private void nullSubstraitVersions() {
      UInt4Vector names = (UInt4Vector) root.getVector(0);
      DenseUnionVector values = (DenseUnionVector) root.getVector(1);
      for (int row = 0; row < root.getRowCount(); row++) {
        int id = names.get(row);
        if (id == SqlInfo.FLIGHT_SQL_SERVER_SUBSTRAIT_MIN_VERSION_VALUE
            || id == SqlInfo.FLIGHT_SQL_SERVER_SUBSTRAIT_MAX_VERSION_VALUE) {
          ValueVector child = values.getVectorByType(values.getTypeId(row));
          ((VarCharVector) child).setNull(values.getOffset(row));
        }
      }
    }

    @Override
    public void putNext(ArrowBuf metadata) {
      putNext();
    }

    @Override
    public void putMetadata(ArrowBuf metadata) {}

    @Override
    public void error(Throwable t) {
      failure = t;
    }

    @Override
    public void completed() {}

    @Override
    public boolean isReady() {
      return true;
    }

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public void setOnCancelHandler(Runnable handler) {}
  }
}
