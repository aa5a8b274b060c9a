package io.transit.flight.server.ops;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.filter.ThresholdFilter;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.encoder.Encoder;
import ch.qos.logback.core.filter.Filter;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/**
 * Points Logback at standard error in the configured format ({@code text}: one line with
 * timestamp, level, logger, message and key=value pairs; {@code json}: one JSON object per line)
 * at the configured root level. An operator's own {@code -Dlogback.configurationFile} wins and is
 * left untouched.
 *
 * <p>Lines are written by {@link QueuedConsoleAppender}'s own thread, never by the thread that
 * logs: a standard error nobody reads drops lines (counted) instead of stopping the daemon. The
 * libraries' java.util.logging records (gRPC, its Netty) take the same way.
 *
 * <p>Called on the main thread before the daemon starts, and again on reload (the SIGHUP
 * handler), never concurrently. A reload reconfigures the standard error appender in place
 * instead of replacing it, so a line logged during the reload is written once, in the old format
 * or the new.
 */
public final class LogSetup {
  /** The text layout; {@code %kvp{NONE}} prints key=value pairs unquoted. */
  static final String PATTERN =
      "%d{yyyy-MM-dd'T'HH:mm:ss.SSSX,UTC} %-5level %logger{0} - %msg %kvp{NONE}%n";

  private static final AtomicBoolean EXIT_HOOK = new AtomicBoolean();
  private static final AtomicBoolean JUL_ROUTED = new AtomicBoolean();
  /**
   * gRPC's reports of a peer's bad input, each with a stack trace, logged on the Netty event loop
   * for every message or connection: a request message over {@code max_inbound_message_bytes}
   * (WARNING; the call's status and access line say it) and a connection that is not HTTP/2 or
   * breaks its framing ("Transport failed", INFO; the peer loses only its connection), and
   * request headers gRPC's handler refuses (a malformed {@code grpc-timeout}: "Exception in
   * onHeadersRead()", WARNING, then the stream is reset; an odd {@code TE}). Only SEVERE passes
   * from the first and the last, WARNING from the second. Held here because
   * java.util.logging keeps its loggers weakly, and a collected one would forget its level.
   */
  private static final java.util.logging.Logger[] PEER_FAULTS = {
      quiet("io.grpc.netty.shaded.io.grpc.netty.NettyServerStream",
          java.util.logging.Level.SEVERE),
      quiet("io.grpc.netty.shaded.io.grpc.netty.NettyServerHandler",
          java.util.logging.Level.SEVERE),
      quiet("io.grpc.netty.shaded.io.grpc.netty.NettyServerTransport.connections",
          java.util.logging.Level.WARNING)};
  /**
   * Libraries that print credentials or data at DEBUG: gRPC's Netty frame logger (every request
   * header, the caller's {@code authorization} included, and the first bytes of each message),
   * the S3 client's HTTP headers and wire ({@code Authorization: AWS4-HMAC-SHA256 …}, segment
   * bytes), the AWS SDK's signer and request logs, the PostgreSQL driver and its pool. Under a
   * {@code debug} or {@code trace} level they stay at INFO; at the levels above they follow the
   * root. An operator's own Logback file can still lower them, on purpose.
   */
  static final List<String> NEVER_BELOW_INFO = List.of("io.grpc", "org.apache.hc",
      "software.amazon.awssdk", "org.postgresql", "com.zaxxer.hikari");
  /** The appender writing to standard error, kept across reloads. */
  static final String STANDARD_ERROR = "transit";
  /** The warm-up's appender: every line formatted, then dropped. */
  private static final String DISCARDED = "transit-discarded";

  private LogSetup() {}

  public static void apply(String level, String format) {
    LoggerContext ctx = context();
    if (ctx == null) {
      return;
    }
    install(ctx, level, encoder(ctx, format), null, null);
  }

  /**
   * As {@link #apply}, but every line is formatted and then dropped, except errors, which go to
   * standard error as usual: for the warm-up at start, whose scratch gateway must run the serving
   * path's logging as configured (an access line a call) without showing it. A warm-up with the
   * level raised instead would teach the JIT that those lines are never written, and the first
   * callers afterwards would pay for compiling them again.
   */
  public static void applyDiscarding(String level, String format) {
    LoggerContext ctx = context();
    if (ctx == null) {
      return;
    }
    ThresholdFilter errors = new ThresholdFilter();
    errors.setLevel("ERROR");
    errors.start();
    install(ctx, level, encoder(ctx, format), errors,
        console(ctx, DISCARDED, encoder(ctx, format), OutputStream::nullOutputStream, null));
  }

  private static java.util.logging.Logger quiet(String name, java.util.logging.Level level) {
    java.util.logging.Logger logger = java.util.logging.Logger.getLogger(name);
    logger.setLevel(level);
    return logger;
  }

  /** The current standard error at each write: {@code System.setErr} (tests) redirects it. */
  private static OutputStream standardError() {
    return System.err;
  }

  /** Log lines dropped because standard error did not keep up, since the JVM started. */
  public static long droppedLines() {
    return QueuedConsoleAppender.DROPPED_TOTAL.get();
  }

  /**
   * Writes out every line queued so far, on the calling thread: before the daemon prints to
   * standard output what must follow its log lines (the serving notice after the metrics
   * listener's line, where both go to one journal or terminal). Any thread.
   */
  public static void flush() {
    forEachQueued(QueuedConsoleAppender::flush);
  }

  /**
   * Writes out every queued line, and from then on writes each line on its caller's thread: at
   * the JVM's exit (a shutdown hook, registered with the first appenders), so that the last lines
   * — the shutdown report — are not left in a queue. Any thread; idempotent.
   */
  static void drainAtExit() {
    forEachQueued(QueuedConsoleAppender::writeThrough);
  }

  private static void forEachQueued(Consumer<QueuedConsoleAppender> action) {
    LoggerContext ctx = context();
    if (ctx == null) {
      return;
    }
    ctx.getLogger(Logger.ROOT_LOGGER_NAME).iteratorForAppenders().forEachRemaining(a -> {
      if (a instanceof QueuedConsoleAppender q) {
        action.accept(q);
      }
    });
  }

  /** Logback's context, or null when an operator's own configuration file decides. */
  private static LoggerContext context() {
    if (System.getProperty("logback.configurationFile") != null
        || !(LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx)) {
      return null;
    }
    return ctx;
  }

  private static Encoder<ILoggingEvent> encoder(LoggerContext ctx, String format) {
    if ("json".equals(format)) {
      JsonEncoder json = new JsonEncoder();
      json.setContext(ctx);
      // The line as the text format writes it, beside the template ("message"): the documented
      // lines are greppable in either format. The template's values are in the line already.
      json.setWithFormattedMessage(true);
      json.setWithArguments(false);
      json.start();
      return json;
    }
    PatternLayoutEncoder text = new PatternLayoutEncoder();
    text.setContext(ctx);
    text.setPattern(PATTERN);
    text.start();
    return text;
  }

  private static QueuedConsoleAppender console(LoggerContext ctx, String name,
      Encoder<ILoggingEvent> encoder, Supplier<OutputStream> output,
      Filter<ILoggingEvent> filter) {
    QueuedConsoleAppender out = new QueuedConsoleAppender(ctx, name, encoder, output);
    if (filter != null) {
      out.addFilter(filter);
    }
    out.start();
    return out;
  }

  /**
   * Standard error's appender ({@value #STANDARD_ERROR}) writes with {@code encoder} and passes
   * what {@code filter} accepts; {@code discarded}, when not null, is the warm-up's second
   * appender. The standard error appender is reconfigured in place when it exists, so a reload
   * neither loses nor repeats a line; every other appender (Logback's default console at the
   * first call, the warm-up's) is removed after it.
   */
  private static void install(LoggerContext ctx, String level, Encoder<ILoggingEvent> encoder,
      Filter<ILoggingEvent> filter, Appender<ILoggingEvent> discarded) {
    ch.qos.logback.classic.Logger root = ctx.getLogger(Logger.ROOT_LOGGER_NAME);
    Appender<ILoggingEvent> standardError;
    if (root.getAppender(STANDARD_ERROR) instanceof QueuedConsoleAppender q && q.isStarted()) {
      q.reconfigure(encoder, filter);
      standardError = q;
    } else {
      standardError = console(ctx, STANDARD_ERROR, encoder, LogSetup::standardError, filter);
      root.addAppender(standardError);
    }
    if (discarded != null) {
      root.addAppender(discarded);
    }
    // Added before the others go, so that no line finds the root logger without an appender.
    List<Appender<ILoggingEvent>> others = new ArrayList<>();
    root.iteratorForAppenders().forEachRemaining(a -> {
      if (a != standardError && a != discarded) {
        others.add(a);
      }
    });
    for (Appender<ILoggingEvent> a : others) {
      root.detachAppender(a);
      a.stop();
    }
    Level rootLevel = Level.toLevel(level.toUpperCase(Locale.ROOT), Level.INFO);
    root.setLevel(rootLevel);
    for (String name : NEVER_BELOW_INFO) {
      ctx.getLogger(name).setLevel(rootLevel.isGreaterOrEqual(Level.INFO) ? null : Level.INFO);
    }
    if (JUL_ROUTED.compareAndSet(false, true)) {
      // gRPC and its Netty log through java.util.logging, whose console handler wrote to
      // standard error directly: unformatted, past the queue, on the logging thread.
      SLF4JBridgeHandler.removeHandlersForRootLogger();
      SLF4JBridgeHandler.install();
    }
    if (EXIT_HOOK.compareAndSet(false, true)) {
      Runtime.getRuntime().addShutdownHook(new Thread(LogSetup::drainAtExit, "transit-log-exit"));
    }
  }
}
