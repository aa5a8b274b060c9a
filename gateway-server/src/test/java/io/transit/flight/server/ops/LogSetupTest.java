package io.transit.flight.server.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logging as configured, the warm-up's variant that writes every line and shows errors only, and
 * standard error written from the appender's own thread: a stalled reader never holds up a
 * logging thread, and the exit writes out what is queued.
 */
class LogSetupTest {
  private static final long WAIT_MS = 10_000;
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private PrintStream saved;

  @BeforeEach
  void captureStandardError() {
    saved = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restore() {
    LogSetup.apply("info", "text");
    System.setErr(saved);
  }

  private String shown() {
    synchronized (err) {
      return err.toString(StandardCharsets.UTF_8);
    }
  }

  /** Lines reach standard error from the writer thread: wait for them, bounded. */
  private static void within(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "not within " + WAIT_MS + " ms: " + what);
      Thread.sleep(5);
    }
  }

  @Test
  void aWarmUpKeepsTheConfiguredLevelButShowsOnlyErrors() throws InterruptedException {
    LogSetup.applyDiscarding("info", "text");
    Logger log = LoggerFactory.getLogger("transit.access");
    // The level is the configured one, so the serving path writes (and formats) its lines.
    assertTrue(log.isInfoEnabled());
    log.info("rpc method=GetFlightInfo status=OK");
    log.warn("a scratch gateway's warning");
    log.error("a scratch gateway's failure");
    within(() -> shown().contains("failure"), "the error line");
    assertTrue(shown().contains("ERROR"), shown());
    assertFalse(shown().contains("GetFlightInfo"), shown());
    assertFalse(shown().contains("warning"), shown());

    LogSetup.apply("info", "text");
    log.info("rpc method=DoGet status=OK");
    within(() -> shown().contains("INFO  access - rpc method=DoGet status=OK"), shown());
  }

  @Test
  void theDiscardingVariantFormatsJsonAsConfigured() throws InterruptedException {
    LogSetup.applyDiscarding("debug", "json");
    Logger log = LoggerFactory.getLogger(LogSetupTest.class);
    assertTrue(log.isDebugEnabled());
    log.error("shown as {}", "json");
    within(() -> shown().contains("\"formattedMessage\":\"shown as json\""), shown());
    assertTrue(shown().contains("\"message\":\"shown as {}\""), shown());
    assertFalse(shown().contains("\"arguments\""), shown());
  }

  /**
   * Under debug the gateway's own loggers speak, but not the libraries that would print a
   * caller's Bearer token (gRPC's Netty frame logger) or the S3 client's signed headers.
   */
  @Test
  void debugLeavesTheLibrariesThatPrintCredentialsAtInfo() {
    LogSetup.apply("debug", "text");
    assertTrue(LoggerFactory.getLogger("io.transit.flight.server.GatewayServer").isDebugEnabled());
    for (String name : List.of("io.grpc.netty.shaded.io.grpc.netty.NettyServerHandler",
        "org.apache.hc.client5.http.headers", "org.apache.hc.client5.http.wire",
        "software.amazon.awssdk.auth.signer.Aws4Signer", "org.postgresql.Driver")) {
      Logger library = LoggerFactory.getLogger(name);
      assertFalse(library.isDebugEnabled(), name);
      assertTrue(library.isInfoEnabled(), name);
    }
    LogSetup.apply("warn", "text");
    assertFalse(LoggerFactory.getLogger("io.grpc.netty.shaded.io.grpc.netty.NettyServerHandler")
        .isInfoEnabled(), "above info the libraries follow the root");
    LogSetup.apply("info", "text");
  }

  /**
   * A reader that stops reading: every logging call returns at once, lines past the queue's
   * capacity are dropped and counted, and once the output moves again the lines written say how
   * many were lost, before the lines logged since.
   */
  @Test
  void aStalledOutputDropsLinesInsteadOfHoldingTheLoggingThread() throws Exception {
    Stalled stalled = stalledStandardError();
    LogSetup.apply("info", "text");
    Logger log = LoggerFactory.getLogger("transit.access");
    long droppedBefore = LogSetup.droppedLines();
    int lines = 3 * QueuedConsoleAppender.CAPACITY;
    // Before the queue, the first line's write would have held this thread until the release.
    assertTimeoutPreemptively(Duration.ofMillis(WAIT_MS), () -> {
      for (int i = 0; i < lines; i++) {
        log.info("rpc n={}", i);
      }
    });
    long dropped = LogSetup.droppedLines() - droppedBefore;
    // The writer holds one batch in its stalled write; the queue holds at most its capacity.
    assertTrue(dropped >= lines - QueuedConsoleAppender.CAPACITY - 512L, "dropped " + dropped);

    stalled.moving.countDown();
    // Each batch reports the lines dropped since the last report: one report when the writer took
    // its stalled batch before the queue overflowed, two when a busy host woke it only after the
    // first drops. Together they count every dropped line; the last goes out with the first batch
    // after the stall, which makes room in the queue.
    within(() -> reported(shown()) == dropped, "the reports of the dropped lines");
    log.info("after the stall");
    within(() -> shown().contains("after the stall"), "the line logged after the stall");
    assertEquals(dropped, reported(shown()), shown());
    Matcher m = DROPPED_REPORT.matcher(shown());
    int lastReport = -1;
    while (m.find()) {
      lastReport = m.start();
    }
    assertTrue(lastReport >= 0 && lastReport < shown().indexOf("after the stall"));
    assertTrue(shown().contains("rpc n=0 "), "the first lines were queued, not dropped");
  }

  /**
   * A SIGHUP reload while the writer is stuck in a stalled write returns at once (it used to wait
   * for the write for good, holding the reload thread and every later reload); the writer adopts
   * the new format before its next batch.
   */
  @Test
  void aReloadWhileTheOutputStallsReturnsAtOnceAndTheNextBatchIsInTheNewFormat() throws Exception {
    Stalled stalled = stalledStandardError();
    LogSetup.apply("info", "text");
    Logger log = LoggerFactory.getLogger("transit.access");
    log.warn("before the reload");
    assertTrue(stalled.writing.await(WAIT_MS, TimeUnit.MILLISECONDS), "the writer is stuck");
    // The write stalls until the test lets it move: any bound tells returning from waiting for
    // good, so it is a hang guard, not a speed claim.
    assertTimeoutPreemptively(Duration.ofSeconds(30), () -> LogSetup.apply("info", "json"));
    log.warn("after the reload");
    stalled.moving.countDown();
    within(() -> shown().contains("after the reload"), "the line logged after the reload");
    String after = shown().lines().filter(l -> l.contains("after the reload")).findFirst()
        .orElseThrow();
    assertTrue(after.startsWith("{"), "written in the new format: " + after);
    String before = shown().lines().filter(l -> l.contains("before the reload")).findFirst()
        .orElseThrow();
    assertFalse(before.startsWith("{"), "the stalled batch kept its format: " + before);
  }

  /** Standard error that holds every write until {@code moving}; {@code writing}: one began. */
  private record Stalled(CountDownLatch writing, CountDownLatch moving) {}

  private Stalled stalledStandardError() {
    Stalled stalled = new Stalled(new CountDownLatch(1), new CountDownLatch(1));
    OutputStream out = new OutputStream() {
      @Override
      public void write(int b) {
        write(new byte[] {(byte) b}, 0, 1);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        stalled.writing.countDown();
        try {
          if (!stalled.moving.await(WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("the test never released the output");
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        synchronized (err) {
          err.write(b, off, len);
        }
      }
    };
    System.setErr(new PrintStream(out, true, StandardCharsets.UTF_8));
    return stalled;
  }

  private static final Pattern DROPPED_REPORT =
      Pattern.compile("(\\d+) log lines dropped: the log output did not keep up");

  /** The dropped lines the reports in {@code text} count together. */
  private static long reported(String text) {
    Matcher m = DROPPED_REPORT.matcher(text);
    long sum = 0;
    while (m.find()) {
      sum += Long.parseLong(m.group(1));
    }
    return sum;
  }

  /**
   * SIGHUP reloads while another thread logs: every line is written exactly once, in the old
   * format or the new (replacing the appender lost the lines of the instant between the two).
   */
  @Test
  void aReloadNeitherLosesNorRepeatsALine() throws Exception {
    LogSetup.apply("info", "text");
    Logger log = LoggerFactory.getLogger("transit.access");
    long droppedBefore = LogSetup.droppedLines();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger logged = new AtomicInteger();
    CountDownLatch started = new CountDownLatch(1);
    Thread logging = new Thread(() -> {
      started.countDown();
      for (int i = 0; !stop.get(); i++) {
        log.info("line " + i + " end");
        logged.incrementAndGet();
        if (i % 50 == 49) { // well below what the queue takes between two of the writer's batches
          LockSupport.parkNanos(1_000_000);
        }
      }
    }, "logging");
    logging.start();
    assertTrue(started.await(WAIT_MS, TimeUnit.MILLISECONDS));
    int reloads = 40;
    for (int r = 0; r < reloads; r++) {
      LogSetup.apply("info", r % 2 == 0 ? "json" : "text");
      LockSupport.parkNanos(2_000_000);
    }
    stop.set(true);
    logging.join(WAIT_MS);
    assertFalse(logging.isAlive());
    LogSetup.flush();
    assertEquals(0, LogSetup.droppedLines() - droppedBefore, "the test's own pace was too fast");
    int lines = logged.get();
    int[] seen = new int[lines];
    // Once per output line: a json line holds the text twice (its template and its formatting).
    Pattern numbered = Pattern.compile("line (\\d+) end");
    for (String line : shown().split("\n")) {
      Matcher m = numbered.matcher(line);
      if (m.find()) {
        seen[Integer.parseInt(m.group(1))]++;
      }
    }
    for (int i = 0; i < lines; i++) {
      assertEquals(1, seen[i], "line " + i + " of " + lines + ", " + reloads + " reloads");
    }
  }

  /** What was logged before a flush is on standard error when it returns (the serving notice). */
  @Test
  void aFlushWritesEveryLineLoggedBeforeIt() {
    LogSetup.apply("info", "text");
    Logger log = LoggerFactory.getLogger("transit.metrics");
    log.info("metrics on http://127.0.0.1:1/metrics");
    LogSetup.flush();
    assertTrue(shown().contains("metrics on http://127.0.0.1:1/metrics"), shown());
  }

  /**
   * The JVM's exit hook writes out every queued line in order, and a line logged after it (the
   * shutdown report of another hook) is written before its logging call returns.
   */
  @Test
  void theExitWritesOutTheQueueThenWritesOnTheCallersThread() {
    LogSetup.apply("info", "text");
    Logger log = LoggerFactory.getLogger("transit.access");
    for (int i = 0; i < 100; i++) {
      log.info("queued n={}", i);
    }
    LogSetup.drainAtExit();
    String out = shown();
    int last = -1;
    for (int i = 0; i < 100; i++) {
      int at = out.indexOf("queued n=" + i + " ");
      assertTrue(at > last, "line " + i + " missing or out of order");
      last = at;
    }
    log.info("after the exit's drain");
    assertTrue(shown().contains("after the exit's drain"), shown());
    // The exit leaves the appender writing on its callers' threads; later tests need the queue.
    ch.qos.logback.classic.Logger root = ((ch.qos.logback.classic.LoggerContext)
        LoggerFactory.getILoggerFactory()).getLogger(Logger.ROOT_LOGGER_NAME);
    root.getAppender(LogSetup.STANDARD_ERROR).stop();
  }
}
