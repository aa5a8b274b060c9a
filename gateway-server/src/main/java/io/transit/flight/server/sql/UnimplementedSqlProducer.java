package io.transit.flight.server.sql;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.flight.Result;
import org.apache.arrow.flight.SchemaResult;
import org.apache.arrow.flight.sql.FlightSqlProducer;
import org.apache.arrow.flight.sql.impl.FlightSql;

/**
 * Everything the profile lists as unsupported — prepared statements and parameters, updates,
 * transactions, savepoints, bulk ingestion, Substrait, type info, keys — answers UNIMPLEMENTED
 * with code {@code flight.unimplemented} naming the operation. ADBC's DBAPI relies on exactly
 * this: it sends CreatePreparedStatement first and falls back to an unprepared statement only on
 * UNIMPLEMENTED.
 */
abstract class UnimplementedSqlProducer implements FlightSqlProducer {
  protected final ErrorMapper errors;

  UnimplementedSqlProducer(ErrorMapper errors) {
    this.errors = errors;
  }

  static GatewayException unimplemented(String what) {
    return GatewayException.of(Cause.UNSUPPORTED, "flight.unimplemented", what + " is not implemented by this gateway")
        .with("operation", what);
  }

  @Override
  public void createPreparedStatement(FlightSql.ActionCreatePreparedStatementRequest a0, CallContext a1, StreamListener<Result> a2) {
    a2.onError(errors.toGrpc(unimplemented("CreatePreparedStatement")));
  }

  @Override
  public void closePreparedStatement(FlightSql.ActionClosePreparedStatementRequest a0, CallContext a1, StreamListener<Result> a2) {
    a2.onError(errors.toGrpc(unimplemented("ClosePreparedStatement")));
  }

  @Override
  public FlightInfo getFlightInfoStatement(FlightSql.CommandStatementQuery a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoStatement"));
  }

  @Override
  public FlightInfo getFlightInfoPreparedStatement(FlightSql.CommandPreparedStatementQuery a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoPreparedStatement"));
  }

  @Override
  public SchemaResult getSchemaStatement(FlightSql.CommandStatementQuery a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetSchemaStatement"));
  }

  @Override
  public void getStreamStatement(FlightSql.TicketStatementQuery a0, CallContext a1, ServerStreamListener a2) {
    a2.error(errors.toGrpc(unimplemented("GetStreamStatement")));
  }

  @Override
  public void getStreamPreparedStatement(FlightSql.CommandPreparedStatementQuery a0, CallContext a1, ServerStreamListener a2) {
    a2.error(errors.toGrpc(unimplemented("GetStreamPreparedStatement")));
  }

  @Override
  public Runnable acceptPutStatement(FlightSql.CommandStatementUpdate a0, CallContext a1, FlightStream a2, StreamListener<PutResult> a3) {
    return () -> a3.onError(errors.toGrpc(unimplemented("AcceptPutStatement")));
  }

  @Override
  public Runnable acceptPutPreparedStatementUpdate(FlightSql.CommandPreparedStatementUpdate a0, CallContext a1, FlightStream a2, StreamListener<PutResult> a3) {
    return () -> a3.onError(errors.toGrpc(unimplemented("AcceptPutPreparedStatementUpdate")));
  }

  @Override
  public Runnable acceptPutPreparedStatementQuery(FlightSql.CommandPreparedStatementQuery a0, CallContext a1, FlightStream a2, StreamListener<PutResult> a3) {
    return () -> a3.onError(errors.toGrpc(unimplemented("AcceptPutPreparedStatementQuery")));
  }

  @Override
  public FlightInfo getFlightInfoSqlInfo(FlightSql.CommandGetSqlInfo a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoSqlInfo"));
  }

  @Override
  public void getStreamSqlInfo(FlightSql.CommandGetSqlInfo a0, CallContext a1, ServerStreamListener a2) {
    a2.error(errors.toGrpc(unimplemented("GetStreamSqlInfo")));
  }

  @Override
  public FlightInfo getFlightInfoTypeInfo(FlightSql.CommandGetXdbcTypeInfo a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoTypeInfo"));
  }

  @Override
  public void getStreamTypeInfo(FlightSql.CommandGetXdbcTypeInfo a0, CallContext a1, ServerStreamListener a2) {
    a2.error(errors.toGrpc(unimplemented("GetStreamTypeInfo")));
  }

  @Override
  public FlightInfo getFlightInfoCatalogs(FlightSql.CommandGetCatalogs a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoCatalogs"));
  }

  @Override
  public void getStreamCatalogs(CallContext a0, ServerStreamListener a1) {
    a1.error(errors.toGrpc(unimplemented("GetStreamCatalogs")));
  }

  @Override
  public FlightInfo getFlightInfoSchemas(FlightSql.CommandGetDbSchemas a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoSchemas"));
  }

  @Override
  public void getStreamSchemas(FlightSql.CommandGetDbSchemas a0, CallContext a1, ServerStreamListener a2) {
    a2.error(errors.toGrpc(unimplemented("GetStreamSchemas")));
  }

  @Override
  public FlightInfo getFlightInfoTables(FlightSql.CommandGetTables a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoTables"));
  }

  @Override
  public void getStreamTables(FlightSql.CommandGetTables a0, CallContext a1, ServerStreamListener a2) {
    a2.error(errors.toGrpc(unimplemented("GetStreamTables")));
  }

  @Override
  public FlightInfo getFlightInfoTableTypes(FlightSql.CommandGetTableTypes a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoTableTypes"));
  }

  @Override
  public void getStreamTableTypes(CallContext a0, ServerStreamListener a1) {
    a1.error(errors.toGrpc(unimplemented("GetStreamTableTypes")));
  }

  @Override
  public FlightInfo getFlightInfoPrimaryKeys(FlightSql.CommandGetPrimaryKeys a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoPrimaryKeys"));
  }

  @Override
  public void getStreamPrimaryKeys(FlightSql.CommandGetPrimaryKeys a0, CallContext a1, ServerStreamListener a2) {
    a2.error(errors.toGrpc(unimplemented("GetStreamPrimaryKeys")));
  }

  @Override
  public FlightInfo getFlightInfoExportedKeys(FlightSql.CommandGetExportedKeys a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoExportedKeys"));
  }

  @Override
  public FlightInfo getFlightInfoImportedKeys(FlightSql.CommandGetImportedKeys a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoImportedKeys"));
  }

  @Override
  public FlightInfo getFlightInfoCrossReference(FlightSql.CommandGetCrossReference a0, CallContext a1, FlightDescriptor a2) {
    throw errors.toGrpc(unimplemented("GetFlightInfoCrossReference"));
  }

  @Override
  public void getStreamExportedKeys(FlightSql.CommandGetExportedKeys a0, CallContext a1, ServerStreamListener a2) {
    a2.error(errors.toGrpc(unimplemented("GetStreamExportedKeys")));
  }

  @Override
  public void getStreamImportedKeys(FlightSql.CommandGetImportedKeys a0, CallContext a1, ServerStreamListener a2) {
    a2.error(errors.toGrpc(unimplemented("GetStreamImportedKeys")));
  }

  @Override
  public void getStreamCrossReference(FlightSql.CommandGetCrossReference a0, CallContext a1, ServerStreamListener a2) {
    a2.error(errors.toGrpc(unimplemented("GetStreamCrossReference")));
  }

  @Override
  public void close() {}
}
