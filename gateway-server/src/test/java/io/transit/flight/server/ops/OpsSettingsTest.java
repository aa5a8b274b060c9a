package io.transit.flight.server.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.server.config.ConfigException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OpsSettingsTest {
  @TempDir Path dir;

  private Path file(String json) throws Exception {
    return Files.writeString(dir.resolve("gateway.json"), json);
  }

  @Test
  void theAnnotatedExampleSetsEveryField() throws Exception {
    OpsSettings s = OpsSettings.read(Path.of("..", "config", "gateway.example.json"));
    assertEquals(new OpsSettings("127.0.0.1", 9464, "info", "text", true, 5000), s);
  }

  @Test
  void absentSectionIsTheDefaultsWithNoMetricsListener() throws Exception {
    OpsSettings s = OpsSettings.read(file("{\"state_dir\": \".\"}"));
    assertEquals(OpsSettings.defaults(), s);
    assertNull(s.metricsPort());
  }

  @Test
  void commandLineOverridesTheFile() throws Exception {
    OpsSettings s = OpsSettings.read(file("{\"ops\": {\"log\": {\"level\": \"warn\"}}}"))
        .withOverrides(null, 0, "debug", "json", 250L);
    assertEquals(new OpsSettings("127.0.0.1", 0, "debug", "json", true, 250), s);
  }

  @Test
  void refusalsNameTheField() throws Exception {
    assertTrue(assertThrows(ConfigException.class,
        () -> OpsSettings.read(file("{\"ops\": {\"metric\": {}}}"))).getMessage()
        .startsWith("unknown field ops.metric (expected: one of"));
    // Read first at start, reload and check-config: a syntax error reads as the loader's does.
    java.nio.file.Path broken = file("{\n \"state_dir\": ,\n}");
    assertEquals(broken + ": invalid JSON at state_dir: Unexpected character (',' (code 44)):"
        + " expected a value (line 2, column 15)", assertThrows(ConfigException.class,
            () -> OpsSettings.read(broken)).getMessage());
    assertTrue(assertThrows(ConfigException.class,
        () -> OpsSettings.read(file("{\"ops\": {\"log\": {\"format\": \"xml\"}}}"))).getMessage()
        .startsWith("ops.log.format: xml"));
    assertTrue(assertThrows(ConfigException.class,
        () -> OpsSettings.read(file("{\"ops\": {\"metrics\": {\"port\": 70000}}}")))
        .getMessage().startsWith("ops.metrics.port: 70000"));
    assertTrue(assertThrows(ConfigException.class,
        () -> OpsSettings.read(file("{\"ops\": {\"drain_notice_ms\": \"5s\"}}")))
        .getMessage().startsWith("ops.drain_notice_ms: \"5s\""));
    // A number is not the host "0" (every address), nor null the host named "null".
    assertEquals("ops.metrics.host: 0 (expected: a string)", assertThrows(ConfigException.class,
        () -> OpsSettings.read(file("{\"ops\": {\"metrics\": {\"host\": 0}}}"))).getMessage());
    assertTrue(assertThrows(ConfigException.class,
        () -> OpsSettings.read(file("{\"ops\": {\"metrics\": {\"host\": null}}}")))
        .getMessage().startsWith("ops.metrics.host: null"));
    // A refused value is shown bounded: a container by its kind only.
    assertEquals("ops.log.access: an array (expected: true or false)",
        assertThrows(ConfigException.class, () -> OpsSettings.read(file(
            "{\"ops\": {\"log\": {\"access\": [" + "1,".repeat(5000) + "1]}}}"))).getMessage());
  }
}
