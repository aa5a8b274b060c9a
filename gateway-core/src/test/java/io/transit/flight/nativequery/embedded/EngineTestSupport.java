package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.DeterministicProto;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.nativequery.Planner;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.proto.BeginUpload;
import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.SealUpload;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.SubmitQuery;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.proto.UploadPart;
import io.transit.flight.cells.CellFormat;
import io.transit.flight.query.QueryPlan;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.UInt1Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ArrowStreamReader;

/**
 * Test-side admission: a fixed-seed principal, bundles, signed command chains, a planner; and the
 * bounded waits engine tests share, including the check that an engine ends holding no buffer.
 */
public final class EngineTestSupport {
  static final long PRINCIPAL = 42;
  static final long EPOCH = 7;
  static final long RECIPIENT = 900;
  static final Ed25519.KeyPair KEY = Ed25519.fromSeed(seed(1));
  static final Ed25519.KeyPair OTHER_KEY = Ed25519.fromSeed(seed(2));

  /** How long a finished engine may take to give its last execution buffer back. */
  private static final long RELEASE_MILLIS = 10_000;

  private EngineTestSupport() {}

  /** Polls {@code condition} until it holds, failing with {@code what} after {@code millis}. */
  static void within(long millis, BooleanSupplier condition, String what)
      throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() - end < 0, what);
      Thread.sleep(10);
    }
  }

  /** Polls until {@code value} reads {@code expected} (30 s at most); fails naming the last. */
  static void await(String what, LongSupplier value, long expected) throws InterruptedException {
    await(what, value, expected, 30_000);
  }

  private static void await(String what, LongSupplier value, long expected, long millis)
      throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (value.getAsLong() != expected) {
      assertTrue(System.nanoTime() - end < 0, what + ": still " + value.getAsLong());
      Thread.sleep(10);
    }
  }

  /**
   * Waits (bounded) until the engine's execution allocator holds nothing. close() only logs the
   * buffers still allocated, so a test that just closes would pass a leak; the wait covers a run
   * (an early one, say) that lets its last buffer go a moment after its result is visible.
   */
  public static void assertNoExecutionBuffers(EmbeddedEngine engine)
      throws InterruptedException {
    await("execution buffers still allocated", engine::allocatedBytes, 0, RELEASE_MILLIS);
  }

  /**
   * {@link #assertNoExecutionBuffers}, then close (even when that failed, so nothing stays open),
   * then nothing allocated either: a close that cancelled a run must not strand its buffers.
   */
  public static void closeWithoutLeaks(EmbeddedEngine engine) throws InterruptedException {
    try {
      assertNoExecutionBuffers(engine);
    } finally {
      engine.close();
    }
    assertEquals(0, engine.allocatedBytes(), "execution buffers still allocated after close");
  }

  static byte[] seed(int b) {
    byte[] s = new byte[32];
    Arrays.fill(s, (byte) b);
    return s;
  }

  static PrincipalRights rights(boolean send, boolean inspect, Set<Long> sources) {
    return new PrincipalRights(PRINCIPAL, KEY.publicKey(), EPOCH, send, inspect, sources);
  }

  static PrincipalRights fullRights() {
    return rights(true, true, Set.of(1L));
  }

  static ReadAccess access() {
    return new ReadAccess(PRINCIPAL, false, 0, 1);
  }

  static Budgets budgets(long maxRows, long maxBytes, long maxSegmentBytes, int rowsPerSegment) {
    return Budgets.newBuilder()
        .setMaxResultRows(maxRows)
        .setMaxResultBytes(maxBytes)
        .setMaxSegmentBytes(maxSegmentBytes)
        .setRowsPerSegment(rowsPerSegment)
        .build();
  }

  static Budgets roomyBudgets() {
    return budgets(10_000_000, 1L << 32, 1L << 28, 2048);
  }

  static RequestBundle bundle(TableDeclaration table, String sql, Budgets budgets, long epoch,
      Ed25519.KeyPair key) {
    return bundle(table, sql, budgets, epoch, key, RECIPIENT);
  }

  static RequestBundle bundle(TableDeclaration table, String sql, Budgets budgets, long epoch,
      Ed25519.KeyPair key, long recipient) {
    byte[] sqlBytes = sql.getBytes(StandardCharsets.UTF_8);
    PrincipalProof proof = NativeSignatures.signProof(PrincipalProof.newBuilder()
        .setPrincipal(PRINCIPAL)
        .setCredentialEpoch(epoch)
        .setQuerySha256(ByteString.copyFrom(Digests.sha256(sqlBytes)))
        .setRecipient(recipient)
        .build(), key);
    return RequestBundle.newBuilder()
        .setVersion(1)
        .setTable(table)
        .setDeclarationSha256(ByteString.copyFrom(DeclarationFingerprint.of(table)))
        .setSql(ByteString.copyFrom(sqlBytes))
        .setBudgets(budgets)
        .setProof(proof)
        .build();
  }

  static RequestBundle bundle(TableDeclaration table, String sql, Budgets budgets) {
    return bundle(table, sql, budgets, EPOCH, KEY);
  }

  static NativeCommand.Builder command(long sequence, long namespace) {
    return NativeCommand.newBuilder()
        .setPrincipal(PRINCIPAL)
        .setSequence(sequence)
        .setNamespace(namespace);
  }

  static SignedCommand sign(NativeCommand.Builder c) {
    return NativeSignatures.signCommand(c.build(), KEY);
  }

  /** begin, parts of at most {@code partBytes}, seal, submit — consecutive from {@code first}. */
  static List<SignedCommand> chain(long first, RequestBundle bundle, int partBytes) {
    byte[] bytes = DeterministicProto.bytes(bundle);
    ByteString sha = ByteString.copyFrom(Digests.sha256(bytes));
    int parts = (bytes.length + partBytes - 1) / partBytes;
    List<SignedCommand> out = new ArrayList<>();
    long seq = first;
    out.add(sign(command(seq++, first).setBegin(BeginUpload.newBuilder()
        .setBundleBytes(bytes.length).setPartCount(parts).setBundleSha256(sha))));
    for (int i = 0; i < parts; i++) {
      int from = i * partBytes;
      int to = Math.min(bytes.length, from + partBytes);
      out.add(sign(command(seq++, first).setPart(UploadPart.newBuilder()
          .setIndex(i).setData(ByteString.copyFrom(bytes, from, to - from)))));
    }
    out.add(sign(command(seq++, first).setSeal(SealUpload.newBuilder().setBundleSha256(sha))));
    out.add(sign(command(seq, first).setSubmit(SubmitQuery.newBuilder().setBundleSha256(sha))));
    return out;
  }

  /** Sends a whole chain; every step must be accepted; returns the submit's correlation. */
  static long admit(EmbeddedEngine engine, long first, RequestBundle bundle) {
    CommandOutcome last = null;
    for (SignedCommand c : chain(first, bundle, 200)) {
      last = engine.send(c);
      assertEquals(CommandOutcome.Kind.ACCEPTED, last.getKind(), last.getMessage());
    }
    return last.getCorrelation();
  }

  /** A planner over a fixed SQL → plan table; anything else is "unsupported". */
  static final class TablePlanner implements Planner {
    private final Map<String, QueryPlan> plans = new HashMap<>();

    TablePlanner put(String sql, QueryPlan plan) {
      plans.put(sql, plan);
      return this;
    }

    @Override
    public QueryPlan plan(String sql, TableDeclaration table) {
      QueryPlan p = plans.get(sql);
      if (p == null) {
        throw QueryCode.UNSUPPORTED.failure("the test planner has no plan for this SQL");
      }
      return p;
    }
  }

  /** One decoded cell. */
  record Cell(int state, long value) {}

  /** Decodes one segment: per row, per column, the cell; checks the schema and one batch. */
  static List<List<Cell>> decode(byte[] segment, List<String> names) throws IOException {
    List<List<Cell>> rows = new ArrayList<>();
    try (RootAllocator allocator = new RootAllocator();
        ArrowStreamReader reader =
            new ArrowStreamReader(new ByteArrayInputStream(segment), allocator)) {
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      assertEquals(CellFormat.segmentSchema(names), root.getSchema());
      int batches = 0;
      while (reader.loadNextBatch()) {
        batches++;
        for (int r = 0; r < root.getRowCount(); r++) {
          List<Cell> row = new ArrayList<>();
          for (int c = 0; c < names.size(); c++) {
            StructVector s = (StructVector) root.getVector(c);
            assertEquals(0, s.getNullCount(), "cells are never Arrow nulls");
            assertEquals(0, s.getChild(CellFormat.STATE).getNullCount());
            assertEquals(0, s.getChild(CellFormat.VALUE).getNullCount());
            row.add(new Cell(s.getChild(CellFormat.STATE, UInt1Vector.class).get(r) & 0xff,
                s.getChild(CellFormat.VALUE, BigIntVector.class).get(r)));
          }
          rows.add(row);
        }
      }
      assertEquals(1, batches, "a segment holds exactly one batch");
    }
    return rows;
  }

  static QueryPlan.Output column(String name, io.transit.flight.query.LogicalType type,
      boolean nullable) {
    return new QueryPlan.Output(name, nullable, QueryPlan.OutputKind.COLUMN, name, type);
  }
}
