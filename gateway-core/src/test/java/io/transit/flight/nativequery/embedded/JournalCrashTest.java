package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a process that is admitting and executing queries with SIGKILL at an arbitrary moment,
 * then reopens its state: every outcome the child reported replays byte for byte, the journal
 * continues at a consistent sequence and accepted queries finish.
 */
class JournalCrashTest {
  @TempDir Path data;
  @TempDir Path state;

  static final String SQL = "SELECT big FROM demo_cells";
  static final QueryPlan PLAN =
      new QueryPlan(List.of(column("big", LogicalType.UINT64, false)), null, null, false);

  /** The child: admits queries forever, printing each recorded outcome. */
  public static void main(String[] args) throws Exception {
    Path stateDir = Path.of(args[0]);
    Publication cells = new Publication(DemoData.declaration(DemoData.CELLS, 3),
        List.of(Path.of(args[1])), "parquet");
    EmbeddedEngine engine = EmbeddedEngine.open(stateDir, EngineOptions.defaults(),
        List.of(cells), List.of(fullRights()), new TablePlanner().put(SQL, PLAN));
    long first = engine.nextSequence(PRINCIPAL);
    while (true) {
      for (SignedCommand c : chain(first, bundle(cells.declaration(), SQL, roomyBudgets()), 64)) {
        CommandOutcome o = engine.send(c);
        System.out.println(Base64.getEncoder().encodeToString(c.toByteArray()) + " "
            + Base64.getEncoder().encodeToString(o.toByteArray()));
        first = o.getSequence() + 1;
      }
    }
  }

  @Test
  void killMinusNineLeavesAConsistentJournal() throws Exception {
    Publication cells = DemoData.generate(data).get(2);
    ProcessBuilder pb = new ProcessBuilder(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "-cp", System.getProperty("java.class.path"),
        JournalCrashTest.class.getName(), state.toString(), cells.files().get(0).toString());
    pb.redirectError(ProcessBuilder.Redirect.DISCARD);
    Process child = pb.start();
    List<String[]> acknowledged = new ArrayList<>();
    try (BufferedReader out = new BufferedReader(
        new InputStreamReader(child.getInputStream(), StandardCharsets.US_ASCII))) {
      String line;
      while (acknowledged.size() < 40 && (line = out.readLine()) != null) {
        acknowledged.add(line.split(" "));
      }
      child.destroyForcibly(); // SIGKILL: no shutdown hooks, no close
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
    }
    assertEquals(40, acknowledged.size(), "the child acknowledged 40 commands");

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
    }
  }
}
