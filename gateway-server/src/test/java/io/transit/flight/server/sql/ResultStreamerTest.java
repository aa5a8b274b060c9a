package io.transit.flight.server.sql;

import static io.transit.flight.server.TestBindings.caller;
import static io.transit.flight.server.stream.LoopbackStreams.fact;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.transit.flight.admission.AdmissionConfig;
import io.transit.flight.admission.AdmissionLimiter;
import io.transit.flight.admission.AdmissionService;
import io.transit.flight.nativequery.AccessUse;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.nativequery.Planner;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.nativequery.embedded.EmbeddedEngine;
import io.transit.flight.nativequery.embedded.PlanCache;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.server.Bindings;
import io.transit.flight.server.TestBindings;
import io.transit.flight.server.auth.AuthSnapshot;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.Limits;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.request.Deadlines;
import io.transit.flight.server.stream.LoopbackStreams;
import io.transit.flight.server.ops.AdmissionRecorder;
import io.transit.flight.ticket.StatementReference;
import io.transit.flight.ticket.VerifiedTicket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import java.util.stream.Stream;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandStatementQuery;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Statement results from GetFlightInfo to DoGet with the real embedded engine, admission, ticket
 * service, authorization and streaming core over loopback: a retained result streams in order;
 * the batch one byte over the response budget, a batch built across a revocation, and evidence
 * the engine no longer holds each end the stream with their own status before anything they
 * would disclose; and no byte stays allocated (LoopbackStreams' close and the engine check before
 * its close fail the test otherwise).
 */
class ResultStreamerTest {
  private static final int ROWS = 250;
  private static final int PER_SEGMENT = 100;
  private static final String SQL = "SELECT a FROM t";

  @TempDir Path dir;
  private LoopbackStreams loopback;
  private TestBindings bindings;
  private ResolvedConfig cfg;
  private EmbeddedEngine engine;
  private TestBindings.Served served;
  private CallerBinding caller;
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  @BeforeEach
  void start() throws Exception {
    loopback = new LoopbackStreams();
    bindings = new TestBindings(dir);
    bindings.writeData(ROWS);
    cfg = bindings.configWithLimits("\"rows_per_segment\": " + PER_SEGMENT, 3,
        caller("a", 10, true));
    AuthSnapshot snapshot = bindings.snapshot(cfg);
    engine = EmbeddedEngine.open(dir.resolve("engine"), Bindings.engineOptions(cfg),
        Bindings.publications(cfg), snapshot.rights(), PlanCache.withDefaults());
    served = bindings.serve(cfg, snapshot, "a", engine);
    caller = served.caller();
  }

  @AfterEach
  void stop() throws Exception {
    try {
      loopback.close();
    } finally {
      try {
        // The engine's close() only logs buffers it still holds: wait (bounded) for none.
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (engine.allocatedBytes() != 0 && System.nanoTime() - end < 0) {
          Thread.sleep(10);
        }
        assertEquals(0, engine.allocatedBytes(), "engine execution buffers still allocated");
      } finally {
        engine.close();
        timer.shutdownNow();
      }
    }
  }

  /** GetFlightInfo through the real statement service: compile, admit, retain, issue. */
  private VerifiedTicket admitted() {
    Limits limits = cfg.limits();
    AdmissionConfig admission = new AdmissionConfig(limits.admissionPerGateway(),
        limits.admissionPerCaller(), limits.uploadPartBytes());
    StatementService statements = new StatementService(served.authorization(),
        new CompileGate(engine.planner(), new AdmissionLimiter(2, 1), limits.compileTimeoutMs(),
            timer),
        new AdmissionService(engine, AdmissionLimiter.of(admission), admission), engine,
        served.tickets(), limits, new Deadlines(30_000, 60_000, 30_000, 60_000),
        new AdmissionRecorder());
    CommandStatementQuery query = CommandStatementQuery.newBuilder().setQuery(SQL).build();
    FlightInfo info = statements.getFlightInfo(query,
        FlightDescriptor.command(query.toByteArray()), caller,
        List.of(Long.toUnsignedString(engine.nextSequence(caller.principal()))));
    assertEquals(ROWS, info.getRecords());
    return served.verify(info.getEndpoints().get(0).getTicket().getBytes());
  }

  private LoopbackStreams.Seen stream(NativeQueryClient client, long responseBudget,
      VerifiedTicket ticket) throws Exception {
    Limits limits = bindings.configWithLimits("\"rows_per_segment\": " + PER_SEGMENT
        + ", \"max_response_bytes_per_stream\": " + responseBudget, 3, caller("a", 10, true))
        .limits();
    ResultStreamer results = new ResultStreamer(served.authorization(), client, loopback.handler,
        loopback.gatewayRoot, limits);
    return loopback.read(ch -> results.stream(ch, caller, ticket));
  }

  private LoopbackStreams.Seen stream(VerifiedTicket ticket) throws Exception {
    return stream(engine, cfg.limits().maxResponseBytesPerStream(), ticket);
  }

  @Test
  void retainedResultStreamsItsSegmentsInOrderAndCompletes() throws Exception {
    LoopbackStreams.Seen seen = stream(admitted());
    assertNull(seen.error());
    assertEquals(List.of(0L, (long) PER_SEGMENT, 2L * PER_SEGMENT), seen.firsts());
    assertEquals(ROWS, seen.rows());
  }

  @Test
  void batchOneByteOverTheResponseBudgetIsNeverSentAndTheStreamFailsWithExactFacts()
      throws Exception {
    VerifiedTicket ticket = admitted();
    long whole = stream(ticket).bytes();
    LoopbackStreams.Seen seen = stream(engine, whole - 1, ticket);
    assertEquals(List.of(0L, (long) PER_SEGMENT), seen.firsts(), "the last batch is not sent");
    assertEquals(FlightStatusCode.RESOURCE_EXHAUSTED, seen.error().status().code());
    JsonNode d = seen.diagnostic();
    assertEquals("flight.response_budget", d.get("code").asText());
    assertEquals("incomplete", d.get("outcome").asText(), "the query succeeded; this read did not");
    assertEquals(Long.toString(whole - 1), fact(d, "limit"));
    assertEquals(Long.toString(whole), fact(d, "required"));
    // The refused batch was freed once, at the channel's unsent site: LoopbackStreams' close
    // finds no leaked stream and no byte, and a second free would have surfaced as INTERNAL.
  }

  @Test
  void readRightRevokedWhileABatchIsBuiltEndsTheStreamBeforeThatBatch() throws Exception {
    VerifiedTicket ticket = admitted();
    AuthSnapshot revoked = bindings.next(cfg, bindings.configWithLimits(
        "\"rows_per_segment\": " + PER_SEGMENT, 3, caller("a", 10, false)));
    // The reload lands after the second segment was read under the old rights, as
    // GatewayServer.reload does it: the engine's rights first, then the one swap.
    NativeQueryClient reloadingAfterRead = new ReadObserver(engine, index -> {
      if (index == 1) {
        engine.updateRights(revoked.rights());
        served.authorization().install(revoked);
      }
    });
    LoopbackStreams.Seen seen = stream(reloadingAfterRead,
        cfg.limits().maxResponseBytesPerStream(), ticket);
    assertEquals(List.of(0L), seen.firsts(), "the batch built across the reload is hidden");
    assertEquals(FlightStatusCode.UNAUTHORIZED, seen.error().status().code());
    assertEquals("access.read_revoked", seen.diagnostic().get("code").asText());
    assertEquals("incomplete", seen.diagnostic().get("outcome").asText(),
        "a batch was delivered: the caller holds a prefix");
  }

  @Test
  void corruptedSegmentEndsTheStreamWithDataLoss() throws Exception {
    VerifiedTicket ticket = admitted();
    // Same size, other bytes: only the digest check before conversion can tell.
    alterInlineSegments("UPDATE inline_segments SET data = zeroblob(length(data))");
    LoopbackStreams.Seen seen = stream(ticket);
    assertEquals(List.of(), seen.firsts());
    assertDataLoss(seen.diagnostic());
  }

  @Test
  void missingSegmentEndsTheStreamWithDataLoss() throws Exception {
    VerifiedTicket ticket = admitted();
    alterInlineSegments("DELETE FROM inline_segments");
    LoopbackStreams.Seen seen = stream(ticket);
    assertEquals(List.of(), seen.firsts());
    assertDataLoss(seen.diagnostic());
  }

  /**
   * A valid ticket for a correlation this gateway's engine never ran (another replica's, a lost
   * journal): missing evidence, DATA_LOSS, never PERMISSION_DENIED or an empty result.
   */
  @Test
  void ticketForAResultTheEngineDoesNotHoldFailsAsDataLoss() throws Exception {
    Authorization authorization = served.authorization();
    Authorization.Grant grant = authorization.current(caller);
    byte[] issued = served.tickets().issue(grant.scope(), caller.declarationFingerprint(),
        authorization.ticketExpiryMillis(grant), new StatementReference(0x7eadL, new byte[32]));
    VerifiedTicket ticket = served.verify(issued);
    LoopbackStreams.Seen seen = stream(ticket);
    assertEquals(List.of(), seen.firsts());
    JsonNode d = seen.diagnostic();
    assertDataLoss(d);
    assertEquals("unknown_result", fact(d, "reason"));
  }

  /** Flight's client has no DATA_LOSS code of its own; the trailer names the gRPC status. */
  private static void assertDataLoss(JsonNode d) {
    assertEquals("DATA_LOSS", d.get("status").asText());
    assertEquals("query.evidence", d.get("code").asText());
  }

  /**
   * Applies {@code sql} to the result's segments. This result is small, so they are kept inline in
   * the journal with its manifest (docs/admission.md §10), not as files; a second connection
   * writes beside the engine's, as an operator's tool would.
   */
  private void alterInlineSegments(String sql) throws Exception {
    try (java.sql.Connection c = java.sql.DriverManager.getConnection(
            "jdbc:sqlite:" + dir.resolve("engine").resolve("journal.sqlite"));
        java.sql.Statement st = c.createStatement()) {
      st.execute("PRAGMA busy_timeout=10000");
      assertTrue(st.executeUpdate(sql) > 0, "the result was retained inline");
    }
    try (Stream<Path> files = Files.list(dir.resolve("engine").resolve("segments"))) {
      assertEquals(List.of(), files.toList(), "no segment file to fall back on");
    } catch (java.nio.file.NoSuchFileException e) {
      // No segment file was ever written.
    }
  }


  /** The real engine, telling the test which segment index it has just read. */
  private record ReadObserver(NativeQueryClient engine, IntConsumer afterRead)
      implements NativeQueryClient {
    @Override
    public Decided decide(SignedCommand command) {
      return engine.decide(command);
    }

    @Override
    public io.transit.flight.nativequery.EngineIdentity engineIdentity() {
      return engine.engineIdentity();
    }

    @Override
    public Planner planner() {
      return engine.planner();
    }

    @Override
    public void checkAccess(ReadAccess access, TableDeclaration table, AccessUse use) {
      engine.checkAccess(access, table, use);
    }

    @Override
    public long nextSequence(long principal) {
      return engine.nextSequence(principal);
    }

    @Override
    public QueryStatus awaitQuery(ReadAccess access, long correlation, long deadlineNanos)
        throws InterruptedException {
      return engine.awaitQuery(access, correlation, deadlineNanos);
    }

    @Override
    public byte[] readManifest(ReadAccess access, long correlation) {
      return engine.readManifest(access, correlation);
    }

    @Override
    public byte[] readSegment(ReadAccess access, long correlation, int index, long maxBytes) {
      byte[] bytes = engine.readSegment(access, correlation, index, maxBytes);
      afterRead.accept(index);
      return bytes;
    }

    @Override
    public ArrowBuf readSegment(ReadAccess access, long correlation, int index, long maxBytes,
        BufferAllocator allocator) {
      ArrowBuf bytes = engine.readSegment(access, correlation, index, maxBytes, allocator);
      afterRead.accept(index);
      return bytes;
    }

    @Override
    public void close() {
      // The test closes the engine itself.
    }
  }
}
