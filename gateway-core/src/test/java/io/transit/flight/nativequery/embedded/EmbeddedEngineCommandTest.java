package io.transit.flight.nativequery.embedded;

import io.transit.flight.diagnostic.Fact;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.AccessUse;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.BeginUpload;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.proto.UploadPart;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The journal's sequencing rules, the upload state machine and submit admission checks. */
class EmbeddedEngineCommandTest {
  @TempDir static Path data;
  @TempDir Path state;

  private static Publication cells;
  private static final String SQL = "SELECT big FROM demo_cells";
  private static final QueryPlan PLAN = new QueryPlan(
      List.of(column("big", LogicalType.UINT64, false)), null, null, false);
  private EmbeddedEngine engine;

  @BeforeAll
  static void demo() throws Exception {
    cells = DemoData.generate(data).get(2);
  }

  @AfterEach
  void close() throws InterruptedException {
    if (engine != null) {
      closeWithoutLeaks(engine);
    }
  }

  private EmbeddedEngine open(EngineOptions options) throws Exception {
    engine = EmbeddedEngine.open(state, options, List.of(cells), List.of(fullRights()),
        new TablePlanner().put(SQL, PLAN));
    return engine;
  }

  private TableDeclaration table() {
    return cells.declaration();
  }

  @Test
  void replayReturnsByteIdenticalOutcomeAndSaysItIsAReplay() throws Exception {
    open(EngineOptions.defaults());
    List<SignedCommand> chain = chain(1, bundle(table(), SQL, roomyBudgets()), 200);
    NativeQueryClient.Decided first = engine.decide(chain.get(0));
    assertEquals(CommandOutcome.Kind.ACCEPTED, first.outcome().getKind());
    assertFalse(first.replayed(), "recorded by this send");
    assertEquals(2, engine.nextSequence(PRINCIPAL));
    NativeQueryClient.Decided again = engine.decide(chain.get(0));
    assertArrayEquals(first.outcome().toByteArray(), again.outcome().toByteArray());
    assertTrue(again.replayed(), "recorded by the first send");
    assertEquals(2, engine.nextSequence(PRINCIPAL));
  }

  @Test
  void differentBytesAtUsedSequenceConflict() throws Exception {
    open(EngineOptions.defaults());
    engine.send(chain(1, bundle(table(), SQL, roomyBudgets()), 200).get(0));
    SignedCommand other = chain(1, bundle(table(), SQL, budgets(1, 1, 1, 1)), 200).get(0);
    GatewayException e = assertThrows(GatewayException.class, () -> engine.send(other));
    assertEquals(Cause.NAMESPACE_CONFLICT, e.kind());
    assertEquals("query.namespace_conflict", e.code());
    assertEquals(Fact.unsigned("sequence", 1), e.facts().get("sequence"));
    assertEquals(Fact.unsigned("namespace", 1), e.facts().get("namespace"));
  }

  @Test
  void gapNamesExpectedSequenceAndIsNotRecorded() throws Exception {
    open(EngineOptions.defaults());
    SignedCommand ahead = chain(5, bundle(table(), SQL, roomyBudgets()), 200).get(0);
    GatewayException e = assertThrows(GatewayException.class, () -> engine.send(ahead));
    assertEquals(Cause.SEQUENCE_GAP, e.kind());
    assertEquals("query.sequence_gap", e.code());
    assertEquals(Fact.unsigned("expected_sequence", 1), e.facts().get("expected_sequence"));
    assertEquals(1, engine.nextSequence(PRINCIPAL));
  }

  @Test
  void rejectionIsRecordedAdvancesAndReplays() throws Exception {
    open(EngineOptions.defaults());
    SignedCommand orphanPart = sign(command(1, 0).setPart(
        UploadPart.newBuilder().setIndex(0).setData(ByteString.copyFromUtf8("x"))));
    CommandOutcome rejected = engine.send(orphanPart);
    assertEquals(CommandOutcome.Kind.REJECTED, rejected.getKind());
    assertEquals("query.invalid_command", rejected.getCode());
    assertEquals(2, engine.nextSequence(PRINCIPAL));
    assertArrayEquals(rejected.toByteArray(), engine.send(orphanPart).toByteArray());
  }

  @Test
  void uploadStateMachineRejectsOutOfOrderParts() throws Exception {
    open(EngineOptions.defaults());
    List<SignedCommand> chain = chain(1, bundle(table(), SQL, roomyBudgets()), 64);
    engine.send(chain.get(0));
    // Part 1 before part 0, carried at sequence 2 with the right namespace.
    NativeCommand part1 = NativeCommand.parseFrom(chain.get(2).getCommand());
    CommandOutcome out = engine.send(sign(part1.toBuilder().setSequence(2)));
    assertEquals(CommandOutcome.Kind.REJECTED, out.getKind());
    assertTrue(out.getMessage().contains("part index 1"), out.getMessage());
    // A seal before all parts arrived is rejected too.
    NativeCommand seal = NativeCommand.parseFrom(chain.get(chain.size() - 2).getCommand());
    assertEquals(CommandOutcome.Kind.REJECTED,
        engine.send(sign(seal.toBuilder().setSequence(3))).getKind());
    // A begin whose namespace is not its sequence is rejected.
    CommandOutcome badBegin = engine.send(sign(command(4, 1).setBegin(BeginUpload.newBuilder()
        .setBundleBytes(10).setPartCount(1).setBundleSha256(ByteString.copyFrom(new byte[32])))));
    assertEquals(CommandOutcome.Kind.REJECTED, badBegin.getKind());
    assertEquals(5, engine.nextSequence(PRINCIPAL));
  }

  @Test
  void badSignatureUnknownPrincipalAndNoSendRightAreDeniedUnrecorded() throws Exception {
    open(EngineOptions.defaults());
    NativeCommand begin = NativeCommand.parseFrom(
        chain(1, bundle(table(), SQL, roomyBudgets()), 200).get(0).getCommand());
    SignedCommand forged = NativeSignatures.signCommand(begin, OTHER_KEY);
    assertEquals(Cause.ACCESS_DENIED,
        assertThrows(GatewayException.class, () -> engine.send(forged)).kind());
    SignedCommand stranger = NativeSignatures.signCommand(begin.toBuilder().setPrincipal(7).build(),
        KEY);
    assertEquals(Cause.ACCESS_DENIED,
        assertThrows(GatewayException.class, () -> engine.send(stranger)).kind());
    engine.updateRights(List.of(rights(false, true, Set.of(1L))));
    SignedCommand good = NativeSignatures.signCommand(begin, KEY);
    assertEquals(Cause.ACCESS_DENIED,
        assertThrows(GatewayException.class, () -> engine.send(good)).kind());
    SignedCommand garbage = SignedCommand.newBuilder()
        .setCommand(ByteString.copyFrom(new byte[] {(byte) 0xff, 0x01})).build();
    GatewayException invalid = assertThrows(GatewayException.class, () -> engine.send(garbage));
    assertEquals(Cause.INVALID_REQUEST, invalid.kind());
    assertEquals("query.invalid_command", invalid.code());
    assertEquals(1, engine.nextSequence(PRINCIPAL));
  }

  @Test
  void anAnnouncedChainIsDecidedCommandByCommandAsIfUnannounced() throws Exception {
    open(EngineOptions.defaults());
    List<SignedCommand> good = chain(1, bundle(table(), SQL, roomyBudgets()), 200);
    int seal = good.size() - 2;
    // The announced seal carries a signature by another key: its prefetched verdict is "false".
    SignedCommand forgedSeal = NativeSignatures.signCommand(
        NativeCommand.parseFrom(good.get(seal).getCommand()), OTHER_KEY);
    List<SignedCommand> announced = new java.util.ArrayList<>(good);
    announced.set(seal, forgedSeal);
    engine.expect(announced);
    for (int i = 0; i < seal; i++) {
      assertEquals(CommandOutcome.Kind.ACCEPTED, engine.send(announced.get(i)).getKind());
    }
    assertEquals(Cause.ACCESS_DENIED,
        assertThrows(GatewayException.class, () -> engine.send(forgedSeal)).kind());
    long sealSequence = NativeCommand.parseFrom(forgedSeal.getCommand()).getSequence();
    assertEquals(sealSequence, engine.nextSequence(PRINCIPAL), "the denied seal is unrecorded");

    // Announced under KEY, then the principal's key rotates: the current key decides.
    engine.expect(good.subList(seal - 1, good.size()));
    engine.updateRights(List.of(new io.transit.flight.nativequery.PrincipalRights(PRINCIPAL,
        OTHER_KEY.publicKey(), EPOCH, true, true, Set.of(1L))));
    assertEquals(Cause.ACCESS_DENIED,
        assertThrows(GatewayException.class, () -> engine.send(good.get(seal))).kind());
    assertEquals(sealSequence, engine.nextSequence(PRINCIPAL));

    // Back to KEY: the genuine seal and submit are accepted and the query runs.
    engine.updateRights(List.of(fullRights()));
    engine.expect(good.subList(seal, good.size()));
    assertEquals(CommandOutcome.Kind.ACCEPTED, engine.send(good.get(seal)).getKind());
    CommandOutcome submit = engine.send(good.get(seal + 1));
    assertEquals(CommandOutcome.Kind.ACCEPTED, submit.getKind(), submit.getMessage());
    assertEquals(QueryStatus.State.SUCCEEDED, engine.awaitQuery(access(), submit.getCorrelation(),
        System.nanoTime() + TimeUnit.SECONDS.toNanos(30)).getState());
  }

  @Test
  void submitChecksProofEpochAndCompiler() throws Exception {
    open(EngineOptions.defaults());
    // A proof with a stale credential epoch: the whole upload is fine, the submit is rejected.
    List<SignedCommand> stale = chain(1, bundle(table(), SQL, roomyBudgets(), EPOCH - 1, KEY), 200);
    CommandOutcome last = null;
    for (SignedCommand c : stale) {
      last = engine.send(c);
    }
    assertEquals(CommandOutcome.Kind.REJECTED, last.getKind());
    assertEquals("query.access_denied", last.getCode());
    // SQL the planner cannot compile: the compiler's code is recorded.
    long next = engine.nextSequence(PRINCIPAL);
    for (SignedCommand c : chain(next, bundle(table(), "SELECT nope", roomyBudgets()), 200)) {
      last = engine.send(c);
    }
    assertEquals(CommandOutcome.Kind.REJECTED, last.getKind());
    assertEquals("query.unsupported", last.getCode());
    // A declaration that differs from the publication.
    TableDeclaration moved = table().toBuilder().setMetadataRef("demo:other").build();
    next = engine.nextSequence(PRINCIPAL);
    for (SignedCommand c : chain(next, bundle(moved, SQL, roomyBudgets()), 200)) {
      last = engine.send(c);
    }
    assertEquals("query.source_unavailable", last.getCode());
  }

  /**
   * The query client's check before disclosure is the submit's own source/requester check: the
   * read right on the Table's source first, then the publication, and for an admission the send
   * and inspect rights; it records nothing.
   */
  @Test
  void checkAccessIsTheSubmitsSourceRequesterCheckAndRecordsNothing() throws Exception {
    open(EngineOptions.defaults());
    engine.checkAccess(access(), table(), AccessUse.ADMIT);
    TableDeclaration moved = table().toBuilder().setMetadataRef("demo:other").build();
    assertEquals("query.source_unavailable", denial(access(), moved, AccessUse.DISCLOSE));
    engine.updateRights(List.of(rights(true, true, Set.of())));
    // No read right: denied before the publication is even looked at.
    assertEquals("query.access_denied", denial(access(), moved, AccessUse.DISCLOSE));
    engine.updateRights(List.of(rights(false, true, Set.of(1L))));
    engine.checkAccess(access(), table(), AccessUse.DISCLOSE);
    assertEquals("query.access_denied", denial(access(), table(), AccessUse.ADMIT));
    engine.updateRights(List.of(rights(true, false, Set.of(1L))));
    assertEquals("query.access_denied", denial(access(), table(), AccessUse.ADMIT));
    engine.updateRights(List.of(fullRights()));
    assertEquals("query.access_denied",
        denial(new ReadAccess(7, false, 0, 1), table(), AccessUse.DISCLOSE));
    assertEquals("query.access_denied",
        denial(new ReadAccess(PRINCIPAL, false, 0, 2), table(), AccessUse.DISCLOSE));
    assertEquals(1, engine.nextSequence(PRINCIPAL));
  }

  private String denial(ReadAccess access, TableDeclaration table, AccessUse use) {
    return assertThrows(GatewayException.class, () -> engine.checkAccess(access, table, use))
        .code();
  }

  @Test
  void submitChecksTheProofRecipientWhenConfigured() throws Exception {
    open(EngineOptions.defaults().withRecipient(RECIPIENT + 1));
    List<SignedCommand> elsewhere = chain(1, bundle(table(), SQL, roomyBudgets()), 200);
    CommandOutcome last = null;
    for (SignedCommand c : elsewhere) {
      last = engine.send(c);
    }
    assertEquals(CommandOutcome.Kind.REJECTED, last.getKind());
    assertEquals("query.access_denied", last.getCode());
    assertEquals("proof recipient " + RECIPIENT + " is not this engine's service id "
        + (RECIPIENT + 1), last.getMessage());
    assertArrayEquals(last.toByteArray(),
        engine.send(elsewhere.get(elsewhere.size() - 1)).toByteArray(), "replayed as recorded");
    // Unsigned: a recipient above 2^63 is compared and reported exactly.
    long next = engine.nextSequence(PRINCIPAL);
    for (SignedCommand c : chain(next, bundle(table(), SQL, roomyBudgets(), EPOCH, KEY, -1L),
        200)) {
      last = engine.send(c);
    }
    assertEquals("proof recipient 18446744073709551615 is not this engine's service id "
        + (RECIPIENT + 1), last.getMessage());
    next = engine.nextSequence(PRINCIPAL);
    long correlation = admit(engine, next,
        bundle(table(), SQL, roomyBudgets(), EPOCH, KEY, RECIPIENT + 1));
    assertEquals(QueryStatus.State.SUCCEEDED, engine.awaitQuery(access(), correlation,
        System.nanoTime() + TimeUnit.SECONDS.toNanos(20)).getState());
  }

  @Test
  void unconfiguredRecipientIsNotChecked() throws Exception {
    open(EngineOptions.defaults());
    assertEquals(0, EngineOptions.defaults().recipient());
    long correlation = admit(engine, 1,
        bundle(table(), SQL, roomyBudgets(), EPOCH, KEY, RECIPIENT + 7));
    assertNotEquals(0, correlation);
  }

  @Test
  void declarationWithUnknownFieldsIsRejectedAtSubmit() throws Exception {
    open(EngineOptions.defaults());
    RequestBundle clean = bundle(table(), SQL, roomyBudgets());
    UnknownFieldSet extra = UnknownFieldSet.newBuilder()
        .addField(99, UnknownFieldSet.Field.newBuilder().addVarint(1).build())
        .build();
    RequestBundle noisy = clean.toBuilder()
        .setTable(table().toBuilder().setUnknownFields(extra))
        .build();
    CommandOutcome last = null;
    for (SignedCommand c : chain(1, noisy, 200)) {
      last = engine.send(c);
    }
    assertEquals(CommandOutcome.Kind.REJECTED, last.getKind());
    assertEquals("query.invalid_command", last.getCode());
    assertEquals("table declaration carries unknown fields", last.getMessage());
  }

  @Test
  void acceptedSubmitRunsAndSecondSubmitOfNamespaceIsRejected() throws Exception {
    open(EngineOptions.defaults());
    List<SignedCommand> chain = chain(1, bundle(table(), SQL, roomyBudgets()), 200);
    long correlation = admit(engine, 1, bundle(table(), SQL, roomyBudgets()));
    assertNotEquals(0, correlation);
    QueryStatus s = engine.awaitQuery(access(), correlation,
        System.nanoTime() + TimeUnit.SECONDS.toNanos(20));
    assertEquals(QueryStatus.State.SUCCEEDED, s.getState());
    assertEquals(4, s.getTotalRows());
    // The same submit again at a new sequence: the namespace was used, no new query.
    NativeCommand submit = NativeCommand.parseFrom(chain.get(chain.size() - 1).getCommand());
    long next = engine.nextSequence(PRINCIPAL);
    CommandOutcome again = engine.send(sign(submit.toBuilder().setSequence(next)));
    assertEquals(CommandOutcome.Kind.REJECTED, again.getKind());
  }

  /**
   * A journal failure reaches the caller as bounded facts (the SQLite result code), never as the
   * driver's text, which can carry SQL, paths or what a trigger or the server said.
   */
  @Test
  void aJournalFailureTellsItsCodeNotItsText() throws Exception {
    open(EngineOptions.defaults());
    SignedCommand begin = chain(1, bundle(table(), SQL, roomyBudgets()), 200).get(0);
    String secret = "secret-text-of-the-journal-/var/lib/x";
    try (java.sql.Connection c = java.sql.DriverManager.getConnection(
            "jdbc:sqlite:" + state.resolve(SqliteJournal.FILE));
        java.sql.Statement s = c.createStatement()) {
      s.execute("CREATE TRIGGER refuse BEFORE INSERT ON commands BEGIN SELECT RAISE(ABORT, '"
          + secret + "'); END");
    }
    GatewayException e = assertThrows(GatewayException.class, () -> engine.send(begin));
    assertEquals(Cause.UNKNOWN_OUTCOME, e.kind());
    assertEquals("query.unknown_outcome", e.code());
    assertFalse(e.facts().containsKey("reason"), e.facts().toString());
    assertEquals(Fact.signed("vendor_code", 19), e.facts().get("vendor_code"),
        "SQLITE_CONSTRAINT, as the trigger's RAISE(ABORT) is");
    assertFalse(e.getMessage().contains(secret), e.getMessage());
    assertFalse(e.facts().toString().contains(secret), e.facts().toString());
    assertFalse(e.facts().toString().contains("SQLITE"), e.facts().toString());
  }

  @Test
  void faultsBeforeAndAfterRecordReportUnknownOutcome() throws Exception {
    AtomicReference<CommandFaults.Point> failAt = new AtomicReference<>();
    open(EngineOptions.defaults().withFaults((point, c) -> point == failAt.get()));
    SignedCommand begin = chain(1, bundle(table(), SQL, roomyBudgets()), 200).get(0);
    failAt.set(CommandFaults.Point.BEFORE_RECORD);
    GatewayException before = assertThrows(GatewayException.class, () -> engine.send(begin));
    assertEquals(Cause.UNKNOWN_OUTCOME, before.kind());
    assertEquals("query.unknown_outcome", before.code());
    assertEquals(1, engine.nextSequence(PRINCIPAL));
    failAt.set(CommandFaults.Point.AFTER_RECORD);
    assertEquals(Cause.UNKNOWN_OUTCOME,
        assertThrows(GatewayException.class, () -> engine.send(begin)).kind());
    assertEquals(2, engine.nextSequence(PRINCIPAL));
    failAt.set(null);
    assertEquals(CommandOutcome.Kind.ACCEPTED, engine.send(begin).getKind());
  }
}
