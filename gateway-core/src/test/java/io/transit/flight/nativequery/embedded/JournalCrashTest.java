package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a process that is admitting and executing queries with SIGKILL at an arbitrary moment,
 * then reopens its state: every outcome the child reported replays byte for byte, the journal
 * continues at a consistent sequence and accepted queries finish. With the history bound on, the
 * child's sweep forgets statements all along, and every statement is found whole or forgotten
 * whole.
 */
class JournalCrashTest {
  @TempDir Path data;
  @TempDir Path state;

  static final String SQL = "SELECT big FROM demo_cells";
  static final QueryPlan PLAN =
      new QueryPlan(List.of(column("big", LogicalType.UINT64, false)), null, null, false);

  /** Results released after this, and statements forgotten after as long again. */
  static final Duration FORGET_AFTER = Duration.ofMillis(200);
  /** Added to a sequence: a namespace no upload holds (the child's refused commands name one). */
  static final long NO_UPLOAD = 1L << 40;

  /**
   * The child: admits queries forever, printing each recorded outcome; with a third argument
   * {@code forget}, under a history bound whose sweep (every 50 ms) forgets them as they age, and
   * every third chain stops after its first part (an upload never submitted, forgotten too),
   * followed by a command refused for naming a namespace no upload holds (its record forgotten by
   * its refusal's age).
   */
  public static void main(String[] args) throws Exception {
    Path stateDir = Path.of(args[0]);
    Publication cells = new Publication(DemoData.declaration(DemoData.CELLS, 3),
        List.of(Path.of(args[1])), "parquet");
    EngineOptions options = args.length > 2 && args[2].equals("forget")
        ? EngineOptions.defaults().withRetention(new RetentionPolicy(FORGET_AFTER, 1L << 40,
            Duration.ofMillis(50), FORGET_AFTER))
        : EngineOptions.defaults();
    EmbeddedEngine engine = EmbeddedEngine.open(stateDir, options,
        List.of(cells), List.of(fullRights()), new TablePlanner().put(SQL, PLAN));
    boolean abandoning = args.length > 2 && args[2].equals("forget");
    long first = engine.nextSequence(PRINCIPAL);
    for (long n = 0; ; n++) {
      List<SignedCommand> chain =
          chain(first, bundle(cells.declaration(), SQL, roomyBudgets()), 64);
      List<SignedCommand> sent = chain;
      if (abandoning && n % 3 == 2) {
        sent = new ArrayList<>(chain.subList(0, 2));
        sent.add(sign(command(first + 2, first + NO_UPLOAD).setPart(
            io.transit.flight.proto.UploadPart.newBuilder().setIndex(0)
                .setData(com.google.protobuf.ByteString.copyFromUtf8("x")))));
      }
      for (SignedCommand c : sent) {
        CommandOutcome o = engine.send(c);
        System.out.println(Base64.getEncoder().encodeToString(c.toByteArray()) + " "
            + Base64.getEncoder().encodeToString(o.toByteArray()));
        first = o.getSequence() + 1;
      }
    }
  }

  /**
   * Starts the child, reads its acknowledgements until it has given {@code count} and {@code
   * running} has passed since the first, then kills it with SIGKILL.
   */
  private List<String[]> acknowledgedThenKilled(Publication cells, int count, Duration running,
      String... mode) throws Exception {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "-cp", System.getProperty("java.class.path"),
        JournalCrashTest.class.getName(), state.toString(), cells.files().get(0).toString()));
    command.addAll(List.of(mode));
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.redirectError(ProcessBuilder.Redirect.DISCARD);
    Process child = pb.start();
    // A child that hangs without printing would block readLine for good: killed after a bound
    // far past a healthy run, its output ends and the count below fails.
    ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor();
    watchdog.schedule(child::destroyForcibly, 120, TimeUnit.SECONDS);
    List<String[]> acknowledged = new ArrayList<>();
    try (BufferedReader out = new BufferedReader(
        new InputStreamReader(child.getInputStream(), StandardCharsets.US_ASCII))) {
      String line;
      long until = 0;
      while ((acknowledged.size() < count || System.nanoTime() < until)
          && (line = out.readLine()) != null) {
        if (acknowledged.isEmpty()) {
          until = System.nanoTime() + running.toNanos();
        }
        acknowledged.add(line.split(" "));
      }
      child.destroyForcibly(); // SIGKILL: no shutdown hooks, no close
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
    } finally {
      watchdog.shutdownNow();
    }
    assertTrue(acknowledged.size() >= count, "the child acknowledged " + acknowledged.size());
    return acknowledged;
  }

  @Test
  void killMinusNineLeavesAConsistentJournal() throws Exception {
    Publication cells = DemoData.generate(data).get(2);
    List<String[]> acknowledged = acknowledgedThenKilled(cells, 40, Duration.ZERO);

    try (EmbeddedEngine engine = EmbeddedEngine.open(state, EngineOptions.defaults(),
        List.of(cells), List.of(fullRights()), new TablePlanner().put(SQL, PLAN))) {
      long next = engine.nextSequence(PRINCIPAL);
      assertTrue(next >= 41, "next " + next);
      List<Long> correlations = new ArrayList<>();
      for (String[] ack : acknowledged) {
        SignedCommand c = SignedCommand.parseFrom(Base64.getDecoder().decode(ack[0]));
        byte[] outcome = Base64.getDecoder().decode(ack[1]);
        CommandOutcome replayed = engine.send(c);
        assertArrayEquals(outcome, replayed.toByteArray());
        if (replayed.getCorrelation() != 0) {
          correlations.add(replayed.getCorrelation());
        }
      }
      assertTrue(correlations.size() >= 2);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      for (long correlation : correlations) {
        assertEquals(QueryStatus.State.SUCCEEDED,
            engine.awaitQuery(access(), correlation, deadline).getState());
      }
      // The journal continues: a fresh upload at the next sequence is accepted.
      long corr = admit(engine, next,
          bundle(cells.declaration(), SQL, roomyBudgets()));
      assertEquals(QueryStatus.State.SUCCEEDED,
          engine.awaitQuery(access(), corr, deadline).getState());
      assertNoExecutionBuffers(engine);
    }
  }

  @Test
  void killMinusNineWhileTheSweepForgetsLeavesEveryStatementWholeOrForgottenWhole()
      throws Exception {
    Publication cells = DemoData.generate(data).get(2);
    // Two seconds of statements, each forgotten 0.4 s after it finished: the kill lands among
    // the sweep's forgetting transactions.
    List<String[]> acknowledged =
        acknowledgedThenKilled(cells, 40, Duration.ofSeconds(2), "forget");

    // Reopened with the history kept: nothing more is forgotten while the test reads.
    try (EmbeddedEngine engine = EmbeddedEngine.open(state, EngineOptions.defaults(),
        List.of(cells), List.of(fullRights()), new TablePlanner().put(SQL, PLAN))) {
      long next = engine.nextSequence(PRINCIPAL);
      // Per namespace: how its acknowledged commands answer now, replayed or pruned.
      Map<Long, Boolean> pruned = new HashMap<>();
      java.util.Set<Long> submitted = new java.util.HashSet<>();
      List<Long> correlations = new ArrayList<>();
      long last = 0;
      for (String[] ack : acknowledged) {
        SignedCommand c = SignedCommand.parseFrom(Base64.getDecoder().decode(ack[0]));
        NativeCommand command = NativeCommand.parseFrom(c.getCommand());
        long namespace = command.getNamespace();
        if (command.getBodyCase() == NativeCommand.BodyCase.SUBMIT) {
          submitted.add(namespace);
        }
        last = Math.max(last, command.getSequence());
        boolean gone;
        try {
          CommandOutcome replayed = engine.send(c);
          assertArrayEquals(Base64.getDecoder().decode(ack[1]), replayed.toByteArray());
          gone = false;
          if (replayed.getCorrelation() != 0) {
            correlations.add(replayed.getCorrelation());
          }
        } catch (GatewayException e) {
          assertEquals(QueryCode.HISTORY_PRUNED, e.queryCode(), e.getMessage());
          gone = true;
        }
        Boolean before = pruned.putIfAbsent(namespace, gone);
        assertTrue(before == null || before == gone,
            "namespace " + namespace + " is partly forgotten");
      }
      assertTrue(pruned.containsValue(true), "the child's sweep forgot nothing: " + pruned);
      assertTrue(pruned.entrySet().stream()
              .anyMatch(e -> e.getValue() && !submitted.contains(e.getKey())),
          "the child's sweep forgot no upload left unsubmitted: " + pruned);
      assertTrue(pruned.entrySet().stream().anyMatch(e -> e.getValue() && e.getKey() > NO_UPLOAD),
          "the child's sweep forgot no refusal naming no upload: " + pruned);
      assertTrue(next > last, "next " + next + " after " + last);
      assertEquals(next, engine.nextSequence(PRINCIPAL), "no refusal moved the next sequence");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      for (long correlation : correlations) {
        QueryStatus.State state = engine.awaitQuery(access(), correlation, deadline).getState();
        assertEquals(QueryStatus.State.SUCCEEDED, state);
      }
      long corr = admit(engine, next, bundle(cells.declaration(), SQL, roomyBudgets()));
      assertEquals(QueryStatus.State.SUCCEEDED,
          engine.awaitQuery(access(), corr, deadline).getState());
      assertNoExecutionBuffers(engine);
    }
  }
}
