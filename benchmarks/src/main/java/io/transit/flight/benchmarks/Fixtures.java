package io.transit.flight.benchmarks;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.DeterministicProto;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.nativequery.embedded.DemoData;
import io.transit.flight.nativequery.embedded.EmbeddedEngine;
import io.transit.flight.nativequery.embedded.EngineOptions;
import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.CellState;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.admission.CommandChain;
import io.transit.flight.cells.CellFormat;
import io.transit.flight.cells.CellSegmentBuilder;
import io.transit.flight.query.QueryCompiler;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Inputs shared by the benchmarks: a fixed-seed principal, the gateway-shaped segment of 65,536
 * rows × 4 int64 columns, request bundles as admission builds them, and an embedded engine over
 * the demo data in a temporary state directory. Used only from JMH setup methods (one thread).
 */
final class Fixtures {
  static final long PRINCIPAL = 101;
  static final long SERVICE = 7;
  static final int SEGMENT_ROWS = 65_536;
  static final List<String> COLUMNS = List.of("a", "b", "c", "d");
  static final Ed25519.KeyPair KEY = Ed25519.fromSeed(seed(1));

  private Fixtures() {}

  static byte[] seed(int first) {
    byte[] s = new byte[Ed25519.SEED_BYTES];
    Arrays.fill(s, (byte) first);
    return s;
  }

  /** One retained segment as the engine writes it: every cell a CELL_INT64 value. */
  static byte[] segment(BufferAllocator allocator) {
    long[][] values = new long[COLUMNS.size()][SEGMENT_ROWS];
    byte[][] states = new byte[COLUMNS.size()][SEGMENT_ROWS];
    byte int64 = CellFormat.code(CellState.CELL_INT64);
    for (int c = 0; c < COLUMNS.size(); c++) {
      for (int r = 0; r < SEGMENT_ROWS; r++) {
        values[c][r] = (long) r * (c + 3) - 1000;
      }
      Arrays.fill(states[c], int64);
    }
    return CellSegmentBuilder.encode(COLUMNS, values, states, allocator);
  }

  /** The output schema of {@code SELECT a, b, c, d}: non-null int64 fields. */
  static Schema outputSchema() {
    return new Schema(COLUMNS.stream()
        .map(n -> Field.notNullable(n, new ArrowType.Int(64, true)))
        .toList());
  }

  static Budgets budgets() {
    return Budgets.newBuilder()
        .setMaxResultRows(100_000_000)
        .setMaxResultBytes(8L << 30)
        .setMaxSegmentBytes(16L << 20)
        .setRowsPerSegment(SEGMENT_ROWS)
        .build();
  }

  /** The canonical bundle admission uploads for {@code sql}, with a signed principal proof. */
  static byte[] bundle(TableDeclaration table, String sql) {
    byte[] sqlBytes = sql.getBytes(StandardCharsets.UTF_8);
    PrincipalProof proof = NativeSignatures.signProof(PrincipalProof.newBuilder()
        .setPrincipal(PRINCIPAL)
        .setCredentialEpoch(1)
        .setQuerySha256(ByteString.copyFrom(Digests.sha256(sqlBytes)))
        .setRecipient(SERVICE)
        .build(), KEY);
    return DeterministicProto.bytes(RequestBundle.newBuilder()
        .setVersion(1)
        .setTable(table)
        .setDeclarationSha256(ByteString.copyFrom(DeclarationFingerprint.of(table)))
        .setSql(ByteString.copyFrom(sqlBytes))
        .setBudgets(budgets())
        .setProof(proof)
        .build());
  }

  /** An engine over freshly generated demo data; the caller closes it and deletes {@code dir}. */
  static Engine engine(Path dir, boolean deferExecution) throws IOException, SQLException {
    return engine(dir, deferExecution, QueryCompiler::compile);
  }

  /** The same with {@code planner} as the engine's compiler (the daemon's is a plan cache). */
  static Engine engine(Path dir, boolean deferExecution,
      io.transit.flight.nativequery.Planner planner) throws IOException, SQLException {
    List<Publication> demo = DemoData.generate(Files.createDirectories(dir.resolve("data")));
    PrincipalRights rights = new PrincipalRights(PRINCIPAL, KEY.publicKey(), 1, true, true,
        Set.of(DemoData.SOURCE));
    EngineOptions options = EngineOptions.defaults().withRecipient(SERVICE)
        .withDeferExecution(deferExecution);
    EmbeddedEngine engine = EmbeddedEngine.open(dir.resolve("engine"), options, demo,
        List.of(rights), planner);
    TableDeclaration primitive = demo.stream()
        .filter(p -> p.declaration().getTable().equals(DemoData.PRIMITIVE))
        .findFirst().orElseThrow().declaration();
    return new Engine(engine, primitive);
  }

  /** An open engine and the demo primitive Table's declaration. */
  record Engine(EmbeddedEngine engine, TableDeclaration primitive) {
    /** Admits {@code sql} at the principal's next sequence; returns the submit's correlation. */
    long admit(String sql) {
      return send(nextChain(bundle(primitive, sql)));
    }

    /** The chain of {@code bundle} signed at the principal's next sequence. */
    List<SignedCommand> nextChain(byte[] bundle) {
      return chainAt(bundle, engine.nextSequence(PRINCIPAL));
    }

    /** The chain of {@code bundle} signed from {@code sequence} on. */
    List<SignedCommand> chainAt(byte[] bundle, long sequence) {
      return CommandChain.derive(bundle, PRINCIPAL, KEY, sequence,
          CommandChain.DEFAULT_PART_BYTES).commands();
    }

    long send(List<SignedCommand> commands) {
      CommandOutcome last = null;
      for (SignedCommand c : commands) {
        last = engine.send(c);
        if (last.getKind() != CommandOutcome.Kind.ACCEPTED) {
          throw new IllegalStateException("command refused: " + last.getMessage());
        }
      }
      return last.getCorrelation();
    }
  }

  static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
