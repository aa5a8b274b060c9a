package io.transit.flight.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.server.ops.OpsSettings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The warm-up at start: a real scratch gateway, real Flight calls, nothing left behind. */
class StartWarmTest {
  private static List<Path> scratchDirs() throws IOException {
    try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      return s.filter(p -> p.getFileName().toString().startsWith("transit-warm-")).toList();
    }
  }

  @Test
  @Timeout(300)
  void aWarmUpServesItsStatementsOnAScratchGatewayAndLeavesNothingBehind() throws Exception {
    List<Path> before = scratchDirs();
    List<String> logging = new ArrayList<>();
    StartWarm.Result r =
        StartWarm.run(20, OpsSettings.defaults(), () -> logging.add("quiet"), () -> logging.add("restored"));
    assertNull(r.failure(), r::toString);
    assertEquals(20, r.served(), "each statement admitted, executed and read, with its round trip");
    assertEquals(List.of("quiet", "restored"), logging);
    assertEquals(before, scratchDirs(), "the scratch state directory is removed");
  }

  @Test
  @Timeout(300)
  void anInterruptedWarmUpStopsSaysWhyAndRemovesItsScratchState() throws Exception {
    List<Path> before = scratchDirs();
    List<String> logging = new ArrayList<>();
    Thread.currentThread().interrupt();
    StartWarm.Result r;
    try {
      r = StartWarm.run(1_000, OpsSettings.defaults(), () -> logging.add("quiet"), () -> logging.add("restored"));
    } finally {
      Thread.interrupted(); // the flag stays set for the caller; clear it for the next test
    }
    assertNotNull(r.failure());
    assertTrue(r.served() < 1_000, r::toString);
    assertEquals(List.of("quiet", "restored"), logging, "logging restored on every path");
    assertEquals(before, scratchDirs());
  }

  @Test
  void theScratchGatewayLogsAsConfiguredWithoutTheMetricsListener() {
    OpsSettings served = new OpsSettings("127.0.0.1", 9464, "debug", "json", false, 5_000);
    assertEquals(new OpsSettings("127.0.0.1", null, "debug", "json", false, 0),
        StartWarm.scratchOps(served), "the port is the served gateway's; no drain notice");
  }

  @Test
  void noWarmUpDoesNothing() {
    List<String> logging = new ArrayList<>();
    StartWarm.Result r = StartWarm.run(0, OpsSettings.defaults(), () -> logging.add("quiet"), () -> logging.add("x"));
    assertEquals(new StartWarm.Result(0, 0, null), r);
    assertFalse(logging.contains("quiet"));
  }
}
