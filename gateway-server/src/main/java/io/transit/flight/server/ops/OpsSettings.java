package io.transit.flight.server.ops;

import com.fasterxml.jackson.databind.JsonNode;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ConfigLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * The configuration file's {@code ops} section: the metrics listener, the log level and format,
 * the access log and the drain notice. Read on its own (the rest of the file is {@link
 * io.transit.flight.server.config.ConfigLoader}'s), with the same strictness: an unknown field or
 * a bad value is a {@link ConfigException} naming its JSON path. Command-line options override
 * the file ({@link #withOverrides}). Immutable.
 *
 * @param metricsPort the Prometheus listener's port; null leaves the listener off, 0 picks one
 * @param drainNoticeMs how long health reports NOT_SERVING before the listener stops accepting
 *     calls, so an edge routes away first
 */
public record OpsSettings(String metricsHost, Integer metricsPort, String logLevel,
    String logFormat, boolean accessLog, long drainNoticeMs) {
  static final Set<String> LEVELS = Set.of("trace", "debug", "info", "warn", "error");
  static final Set<String> FORMATS = Set.of("text", "json");

  public static OpsSettings defaults() {
    return new OpsSettings("127.0.0.1", null, "info", "text", true, 0);
  }

  /** The {@code ops} section of {@code file}; defaults when the file has none. */
  public static OpsSettings read(Path file) throws ConfigException {
    JsonNode root = ConfigLoader.tree(file);
    JsonNode ops = root == null ? null : root.get("ops");
    OpsSettings d = defaults();
    if (ops == null || ops.isNull()) {
      return d;
    }
    only(ops, "ops", Set.of("metrics", "log", "drain_notice_ms"));
    JsonNode metrics = ops.path("metrics");
    JsonNode log = ops.path("log");
    if (!metrics.isMissingNode()) {
      only(metrics, "ops.metrics", Set.of("host", "port"));
    }
    if (!log.isMissingNode()) {
      only(log, "ops.log", Set.of("level", "format", "access"));
    }
    Integer port = metrics.has("port") ? integer(metrics.get("port"), "ops.metrics.port") : null;
    long drain = ops.has("drain_notice_ms")
        ? integer(ops.get("drain_notice_ms"), "ops.drain_notice_ms") : d.drainNoticeMs();
    if (log.has("access") && !log.get("access").isBoolean()) {
      throw new ConfigException("ops.log.access: " + shown(log.get("access"))
          + " (expected: true or false)");
    }
    return new OpsSettings(
        metrics.has("host") ? text(metrics.get("host"), "ops.metrics.host") : d.metricsHost(), port,
        log.has("level") ? text(log.get("level"), "ops.log.level") : d.logLevel(),
        log.has("format") ? text(log.get("format"), "ops.log.format") : d.logFormat(),
        log.has("access") ? log.get("access").asBoolean() : d.accessLog(), drain).validated();
  }

  /** This with each non-null argument in place of the file's value. */
  public OpsSettings withOverrides(String host, Integer port, String level, String format,
      Long drainMs) throws ConfigException {
    return new OpsSettings(host != null ? host : metricsHost, port != null ? port : metricsPort,
        level != null ? level : logLevel, format != null ? format : logFormat, accessLog,
        drainMs != null ? drainMs : drainNoticeMs).validated();
  }

  /**
   * Refuses a reload whose {@code ops} section changes what the running daemon fixed at start
   * ({@code running}): the metrics listener, the access log and the drain notice. Only the log
   * level and format are re-read on SIGHUP.
   */
  public void requireFixedAsIn(OpsSettings running) throws ConfigException {
    List<String> changed = new ArrayList<>();
    if (!metricsHost.equals(running.metricsHost)) {
      changed.add("ops.metrics.host");
    }
    if (!Objects.equals(metricsPort, running.metricsPort)) {
      changed.add("ops.metrics.port");
    }
    if (accessLog != running.accessLog) {
      changed.add("ops.log.access");
    }
    if (drainNoticeMs != running.drainNoticeMs) {
      changed.add("ops.drain_notice_ms");
    }
    if (!changed.isEmpty()) {
      throw new ConfigException(String.join(", ", changed) + " changed: fixed at start, needs a"
          + " restart");
    }
  }

  private OpsSettings validated() throws ConfigException {
    if (metricsPort != null && (metricsPort < 0 || metricsPort > 65535)) {
      throw new ConfigException("ops.metrics.port: " + metricsPort + " (expected: 0..65535)");
    }
    if (!LEVELS.contains(logLevel.toLowerCase(Locale.ROOT))) {
      throw new ConfigException("ops.log.level: " + logLevel + " (expected: one of " + LEVELS + ")");
    }
    if (!FORMATS.contains(logFormat)) {
      throw new ConfigException("ops.log.format: " + logFormat + " (expected: text or json)");
    }
    if (drainNoticeMs < 0 || drainNoticeMs > 300_000) {
      throw new ConfigException("ops.drain_notice_ms: " + drainNoticeMs + " (expected: 0..300000)");
    }
    return this;
  }

  private static void only(JsonNode node, String at, Set<String> known) throws ConfigException {
    if (!node.isObject()) {
      throw new ConfigException(at + ": " + shown(node) + " (expected: an object)");
    }
    for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!known.contains(name)) {
        throw new ConfigException("unknown field " + at + "." + bounded(name)
            + " (expected: one of " + known + ")");
      }
    }
  }

  private static int integer(JsonNode v, String at) throws ConfigException {
    if (!v.canConvertToInt() || !v.isIntegralNumber()) {
      throw new ConfigException(at + ": " + shown(v) + " (expected: an integer)");
    }
    return v.asInt();
  }

  /**
   * A text value, as strictly as the rest of the file is read: {@code "host": 0} is not the
   * host {@code "0"} (every address), nor {@code null} the host named "null".
   */
  private static String text(JsonNode v, String at) throws ConfigException {
    if (!v.isTextual()) {
      throw new ConfigException(at + ": " + shown(v) + " (expected: a string)");
    }
    return v.asText();
  }

  /** A refused value as messages show it: scalars as written (bounded), containers by kind. */
  private static String shown(JsonNode v) {
    return v.isContainerNode() ? "an " + v.getNodeType().name().toLowerCase(Locale.ROOT)
        : bounded(v.toString());
  }

  private static String bounded(String s) {
    return s.length() <= 64 ? s : s.substring(0, 64) + "…";
  }
}
