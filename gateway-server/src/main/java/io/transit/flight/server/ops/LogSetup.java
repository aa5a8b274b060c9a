package io.transit.flight.server.ops;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.encoder.Encoder;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Points Logback at standard error in the configured format ({@code text}: one line with
 * timestamp, level, logger, message and key=value pairs; {@code json}: one JSON object per line)
 * at the configured root level. An operator's own {@code -Dlogback.configurationFile} wins and is
 * left untouched.
 *
 * <p>Called on the main thread before the daemon starts, and again on reload; Logback's context
 * swaps appenders atomically enough for log lines in flight (at worst one line in the old format).
 */
public final class LogSetup {
  /** The text layout; {@code %kvp{NONE}} prints key=value pairs unquoted. */
  static final String PATTERN =
      "%d{yyyy-MM-dd'T'HH:mm:ss.SSSX,UTC} %-5level %logger{0} - %msg %kvp{NONE}%n";

  private LogSetup() {}

  public static void apply(String level, String format) {
    if (System.getProperty("logback.configurationFile") != null
        || !(LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx)) {
      return;
    }
    ch.qos.logback.classic.Logger root = ctx.getLogger(Logger.ROOT_LOGGER_NAME);
    Encoder<ILoggingEvent> encoder;
    if ("json".equals(format)) {
      JsonEncoder json = new JsonEncoder();
      json.setContext(ctx);
      json.start();
      encoder = json;
    } else {
      PatternLayoutEncoder text = new PatternLayoutEncoder();
      text.setContext(ctx);
      text.setPattern(PATTERN);
      text.start();
      encoder = text;
    }
    ConsoleAppender<ILoggingEvent> out = new ConsoleAppender<>();
    out.setContext(ctx);
    out.setName("transit");
    out.setTarget("System.err");
    out.setEncoder(encoder);
    out.start();
    root.detachAndStopAllAppenders();
    root.addAppender(out);
    root.setLevel(Level.toLevel(level.toUpperCase(Locale.ROOT), Level.INFO));
  }
}
