package io.transit.flight.server.ops;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Logging as configured, and the warm-up's variant that writes every line and shows errors only. */
class LogSetupTest {
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
    return err.toString(StandardCharsets.UTF_8);
  }

  @Test
  void aWarmUpKeepsTheConfiguredLevelButShowsOnlyErrors() {
    LogSetup.applyDiscarding("info", "text");
    Logger log = LoggerFactory.getLogger("transit.access");
    // The level is the configured one, so the serving path writes (and formats) its lines.
    assertTrue(log.isInfoEnabled());
    log.info("rpc method=GetFlightInfo status=OK");
    log.warn("a scratch gateway's warning");
    log.error("a scratch gateway's failure");
    assertFalse(shown().contains("GetFlightInfo"), shown());
    assertFalse(shown().contains("warning"), shown());
    assertTrue(shown().contains("ERROR") && shown().contains("failure"), shown());

    LogSetup.apply("info", "text");
    log.info("rpc method=DoGet status=OK");
    assertTrue(shown().contains("INFO  access - rpc method=DoGet status=OK"), shown());
  }

  @Test
  void theDiscardingVariantFormatsJsonAsConfigured() {
    LogSetup.applyDiscarding("debug", "json");
    Logger log = LoggerFactory.getLogger(LogSetupTest.class);
    assertTrue(log.isDebugEnabled());
    log.error("shown as json");
    assertTrue(shown().contains("\"message\":\"shown as json\""), shown());
  }
}
