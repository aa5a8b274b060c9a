package io.transit.flight.server.ops;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;

/**
 * The daemon's Prometheus metrics (names and meanings in docs/operations.md) and, when a port is
 * configured, the HTTP listener that serves them at {@code /metrics}.
 *
 * <p>Threads: meters are recorded from any thread (Micrometer's meters are thread-safe); gauges
 * are read by the scrape, on the listener's event loop; {@link #start} and {@link #close} run on
 * the daemon's main/shutdown thread.
 */
public final class GatewayMetrics implements AutoCloseable {
  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final Counter reloadsOk = Counter.builder("transit.reloads").tag("result", "ok")
      .description("configuration reloads (SIGHUP) by result").register(registry);
  private final Counter reloadsRefused = Counter.builder("transit.reloads")
      .tag("result", "refused").description("configuration reloads (SIGHUP) by result")
      .register(registry);
  private final Counter reloadsUnknown = Counter.builder("transit.reloads")
      .tag("result", "unknown").description("configuration reloads (SIGHUP) by result")
      .register(registry);
  private final Counter streamBytes = Counter.builder("transit.stream.bytes")
      .baseUnit("bytes").description("bytes sent on DoGet result streams").register(registry);
  private final Counter streamBatches = Counter.builder("transit.stream.batches")
      .description("record batches sent on DoGet result streams").register(registry);
  private final Timer journalCommits = Timer.builder("transit.journal.commit")
      .description("journal commit latency (SQLite, or PostgreSQL's COMMIT round trip)").publishPercentileHistogram()
      .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofSeconds(10))
      .register(registry);
  /**
   * The RPC and statement timers by their tags, so that a call records into its timer without
   * building the meter's id again (a builder, tags and a registry look-up a call). Method names,
   * status codes and admission outcomes are a few dozen values in all.
   */
  private final Map<String, Map<String, Timer>> rpcTimers = new ConcurrentHashMap<>();
  private final Map<String, Timer> statementTimers = new ConcurrentHashMap<>();
  // The main thread; close also on the shutdown hook, after addShutdownHook's happens-before.
  private MetricsListener listener;

  public GatewayMetrics() {
    // Every outcome is present from the start, at zero, so a rate() alert sees the series.
    for (String outcome : new String[] {
        "accepted", "replayed", "conflict", "gap", "pruned", "busy", "failed"}) {
      admissionCounter(outcome);
    }
    counter("transit.log.lines.dropped",
        "log lines dropped because standard error did not keep up",
        QueuedConsoleAppender.DROPPED_TOTAL, AtomicLong::get);
  }

  /** One finished RPC: count and latency by method and status code. */
  void rpc(String method, String status, long nanos) {
    Map<String, Timer> byStatus = rpcTimers.get(method);
    if (byStatus == null) {
      byStatus = rpcTimers.computeIfAbsent(method, m -> new ConcurrentHashMap<>());
    }
    Timer timer = byStatus.get(status);
    if (timer == null) {
      timer = byStatus.computeIfAbsent(status, s -> Timer.builder("transit.rpc")
          .description("RPCs by method and gRPC status code")
          .tags("method", method, "status", s).publishPercentileHistogram().register(registry));
    }
    timer.record(nanos, TimeUnit.NANOSECONDS);
  }

  void admission(String outcome) {
    admissionCounter(outcome).increment();
  }

  /** A statement's GetFlightInfo: compile, admission and the retained result. */
  void statement(String outcome, long nanos) {
    Timer timer = statementTimers.get(outcome);
    if (timer == null) {
      timer = statementTimers.computeIfAbsent(outcome, o -> Timer.builder("transit.statement")
          .description("statement GetFlightInfo (compile, admission, result) by admission outcome")
          .tag("outcome", o).publishPercentileHistogram().register(registry));
    }
    timer.record(nanos, TimeUnit.NANOSECONDS);
  }

  void streamed(long bytes, long batches) {
    streamBytes.increment(bytes);
    streamBatches.increment(batches);
  }

  public void reloaded(boolean ok) {
    (ok ? reloadsOk : reloadsRefused).increment();
  }

  /** A reload whose rights commit was not acknowledged (they may be in force): signal thread. */
  public void reloadUnknown() {
    reloadsUnknown.increment();
  }

  /** For the engine's commit observer: any thread. */
  public void journalCommit(long nanos) {
    journalCommits.record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Registers a gauge read at scrape time from {@code source}. */
  public <T> void gauge(String name, String description, T source, ToDoubleFunction<T> value) {
    Gauge.builder(name, source, value).description(description).strongReference(true)
        .register(registry);
  }

  /** Registers a counter whose total is read at scrape time from {@code source}. */
  public <T> void counter(String name, String description, T source, ToDoubleFunction<T> total) {
    FunctionCounter.builder(name, source, total).description(description).register(registry);
  }

  /** Retained result segments: the files under {@code segmentsDir} and their bytes. */
  public void retained(Path segmentsDir) {
    gauge("transit.retained.segments", "retained result segment files", segmentsDir,
        d -> walk(d)[0]);
    gauge("transit.retained.bytes", "bytes of retained result segment files", segmentsDir,
        d -> walk(d)[1]);
  }

  private Counter admissionCounter(String outcome) {
    return Counter.builder("transit.admission").tag("outcome", outcome)
        .description("statement admissions by outcome").register(registry);
  }

  /** The Prometheus text exposition of every meter. */
  public String scrape() {
    return registry.scrape();
  }

  /**
   * Serves {@code /metrics} on {@code host:port} (0 picks a port, {@link MetricsListener});
   * returns the bound port.
   */
  public int start(String host, int port) throws IOException {
    listener = new MetricsListener(this::scrape);
    return listener.start(host, port);
  }

  @Override
  public void close() {
    if (listener != null) {
      listener.close();
      listener = null;
    }
    registry.close();
  }

  /** {count, bytes} of the regular files directly under {@code dir}; zeros when it is absent. */
  private static double[] walk(Path dir) {
    double[] out = new double[2];
    if (!Files.isDirectory(dir)) {
      return out;
    }
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path f : files) {
        BasicFileAttributes a = Files.readAttributes(f, BasicFileAttributes.class);
        if (a.isRegularFile()) {
          out[0]++;
          out[1] += a.size();
        }
      }
    } catch (IOException e) {
      return new double[] {Double.NaN, Double.NaN};
    }
    return out;
  }
}
