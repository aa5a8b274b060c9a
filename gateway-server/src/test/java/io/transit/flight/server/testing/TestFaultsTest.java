package io.transit.flight.server.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.embedded.CommandFaults.Point;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.UploadPart;
import io.transit.flight.proto.SubmitQuery;
import io.transit.flight.server.config.ConfigException;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TestFaultsTest {
  private static final NativeCommand SUBMIT =
      NativeCommand.newBuilder().setSubmit(SubmitQuery.getDefaultInstance()).build();
  private static final NativeCommand PART =
      NativeCommand.newBuilder().setPart(UploadPart.getDefaultInstance()).build();

  private static TestFaults parse(String spec) throws ConfigException {
    return TestFaults.fromEnvironment(Map.of(TestFaults.VARIABLE, spec)).orElseThrow();
  }

  @Test
  void absentOrEmptyMeansNoFaults() throws ConfigException {
    assertTrue(TestFaults.fromEnvironment(Map.of()).isEmpty());
    assertTrue(TestFaults.fromEnvironment(Map.of(TestFaults.VARIABLE, "")).isEmpty());
  }

  @Test
  void onceFiresForExactlyOneMatchingCommandAtItsPoint() throws ConfigException {
    TestFaults f = parse("after-record:submit:once");
    assertFalse(f.fail(Point.BEFORE_RECORD, SUBMIT));
    assertFalse(f.fail(Point.AFTER_RECORD, PART));
    assertTrue(f.fail(Point.AFTER_RECORD, SUBMIT));
    assertFalse(f.fail(Point.AFTER_RECORD, SUBMIT));
    assertEquals(0, f.executionDelayMillis());
  }

  @Test
  void alwaysAnyAndDelayCombine() throws ConfigException {
    TestFaults f = parse("before-record:any:always,execution-delay-ms:2500");
    assertTrue(f.fail(Point.BEFORE_RECORD, PART));
    assertTrue(f.fail(Point.BEFORE_RECORD, SUBMIT));
    assertFalse(f.fail(Point.AFTER_RECORD, SUBMIT));
    assertEquals(2500, f.executionDelayMillis());
    assertEquals(0, f.finishDelayMillis());
    TestFaults both = parse("execution-delay-ms:300,finish-delay-ms:700");
    assertEquals(300, both.executionDelayMillis());
    assertEquals(700, both.finishDelayMillis());
    assertEquals(0, both.submitDelayMillis());
    assertEquals(400, parse("submit-delay-ms:400,finish-delay-ms:700").submitDelayMillis());
  }

  @Test
  void releaseAndClockFaults() throws ConfigException {
    java.time.Clock system = java.time.Clock.systemUTC();
    TestFaults none = parse("execution-delay-ms:5");
    assertFalse(none.releaseAfterExecution());
    assertTrue(none.clock(system) == system);
    TestFaults f = parse("release-after-execution,clock:negative");
    assertTrue(f.releaseAfterExecution());
    assertEquals(-1, f.clock(system).millis());
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> parse("clock:defect").clock(system).millis());
    assertTrue(e.getMessage().contains(TestFaults.VARIABLE));
    assertFalse(f.enginePublicationsNone());
    assertTrue(parse("engine-publications:none").enginePublicationsNone());
  }

  @Test
  void anythingElseRefusesTheStart() {
    for (String bad : new String[] {"after-record:submit", "after-record:submit:twice",
        "during-record:part:once", "after-record:Submit:once", "execution-delay-ms:0",
        "execution-delay-ms:600001", "execution-delay-ms:x", "after-record:submit:once,",
        "finish-delay-ms:0", "finish-delay-ms:600001", "finish-delay-ms", "finish-delay-ms:1:2",
        "submit-delay-ms:0", "submit-delay-ms:600001",
        "release-after-execution:once", "clock", "clock:slow", "clock:negative:once",
        "engine-publications:some",
        " after-record:submit:once"}) {
      ConfigException e = assertThrows(ConfigException.class, () -> parse(bad), bad);
      assertTrue(e.getMessage().startsWith(TestFaults.VARIABLE + ": "), e.getMessage());
    }
  }
}
