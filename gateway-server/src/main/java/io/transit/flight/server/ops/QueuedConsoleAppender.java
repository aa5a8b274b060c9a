package io.transit.flight.server.ops;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.UnsynchronizedAppenderBase;
import ch.qos.logback.core.encoder.Encoder;
import ch.qos.logback.core.filter.Filter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Writes log lines to an output (standard error) from a thread of its own, so that no logging
 * thread — a Netty event loop writing an access line, a gRPC executor, an engine thread — ever
 * waits for the output. A reader that stops reading (a full pipe, a stalled journald) used to stop
 * every thread that logged, the event loops first; now lines queue, and past {@value #CAPACITY}
 * queued lines they are dropped and counted ({@code transit_log_lines_dropped_total}); the next
 * line written says how many were lost.
 *
 * <p>Threads:
 * <ul>
 *   <li>{@link #append} — any logging thread. It captures what the line needs from the calling
 *       thread ({@code prepareForDeferredProcessing}: message, thread name, MDC) and offers the
 *       event to the queue; it never encodes, writes or blocks. WARN and ERROR lines wake the
 *       writer at once; others are picked up within {@value #BUSY_PARK_MS} ms while lines keep
 *       coming ({@value #IDLE_PARK_MS} ms after a quiet spell), so a busy daemon's lines cost one
 *       {@code write} a batch and no wake-up each.</li>
 *   <li>the writer, {@code transit-log} (a daemon thread) — the only thread that encodes and
 *       writes while the appender runs; it owns {@code batch} and {@code bytes}, under
 *       {@code writing}.</li>
 *   <li>{@link #flush} — a thread that must print after the lines logged so far (the main
 *       thread's serving notice): drains the queue itself under {@code writing}.</li>
 *   <li>{@link #reconfigure} (a reload: the main thread or the SIGHUP handler) hands the new
 *       encoder over through {@code pending}; it swaps it in itself only when {@code writing} is
 *       free at once, else the holder does before its next batch.</li>
 *   <li>{@link #stop} (when {@link LogSetup} removes the appender: the main thread) and {@link
 *       #writeThrough} (the JVM's exit): end the writer after a last drain, waiting for it at
 *       most {@value #STOP_WAIT_MS} ms — an output that does not take the last lines must not
 *       hold up the exit. After {@link #writeThrough}, {@link
 *       #append} encodes and writes on the calling thread under {@code writing}, waiting for it
 *       at most as long, so the shutdown's own lines still reach the output in order.</li>
 * </ul>
 */
final class QueuedConsoleAppender extends UnsynchronizedAppenderBase<ILoggingEvent> {
  /** Lines queued at most: about 2 MB of access lines, several seconds of a busy daemon's. */
  static final int CAPACITY = 8192;
  static final long BUSY_PARK_MS = 20;
  static final long IDLE_PARK_MS = 100;
  static final long STOP_WAIT_MS = 2_000;
  /** Lines dropped by every instance since the JVM started (the metric; any thread). */
  static final AtomicLong DROPPED_TOTAL = new AtomicLong();

  // @GuardedBy("writing"): used by whichever thread writes; replaced by the one that adopts a
  // reload's encoder (adoptPending).
  private Encoder<ILoggingEvent> encoder;
  /** A reload's encoder not yet adopted; reconfigure sets it, a holder of writing takes it. */
  private final AtomicReference<Encoder<ILoggingEvent>> pending = new AtomicReference<>();
  private final Supplier<OutputStream> output;
  private final ArrayBlockingQueue<ILoggingEvent> queue = new ArrayBlockingQueue<>(CAPACITY);
  /** Dropped since the last report line; any thread adds, the writing thread takes. */
  private final AtomicLong unreported = new AtomicLong();
  private final ReentrantLock writing = new ReentrantLock();
  // @GuardedBy("writing"): reused for every batch.
  private final List<ILoggingEvent> batch = new ArrayList<>();
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream(1 << 16);
  private volatile boolean running;
  private volatile boolean throughCaller;
  private volatile boolean stalled;
  private volatile Thread writer; // set once in start, before any append

  /**
   * {@code output} is asked for the stream at every write (so that standard error follows {@code
   * System.setErr}); {@code encoder} must be started.
   */
  QueuedConsoleAppender(LoggerContext context, String name, Encoder<ILoggingEvent> encoder,
      Supplier<OutputStream> output) {
    setContext(context);
    setName(name);
    this.encoder = encoder;
    this.output = output;
  }

  @Override
  public void start() {
    running = true;
    writer = new Thread(this::writeLoop, "transit-log");
    writer.setDaemon(true);
    writer.start();
    super.start();
  }

  @Override
  protected void append(ILoggingEvent event) {
    if (throughCaller) {
      writeNow(event);
      return;
    }
    event.prepareForDeferredProcessing();
    if (!queue.offer(event)) {
      dropped();
      return;
    }
    if (event.getLevel().isGreaterOrEqual(Level.WARN)) {
      LockSupport.unpark(writer);
    }
    if (throughCaller) {
      // The exit's last drain may have run before this offer: take the line out ourselves.
      writeNow(null);
    }
  }

  @Override
  public void stop() {
    endWriter();
    super.stop();
  }

  /**
   * Writes every later line with {@code next} (started) and passes only what {@code filter}
   * accepts (null: every line), without replacing the appender: a reload that replaced it lost
   * the lines logged in the instant between the two, and the old one's queue could keep a line
   * offered after its last drain. Lines already queued are written with {@code next}. The main
   * thread or the SIGHUP handler; never waits: while a batch is being written (an output that
   * stalls can hold it for good) the writer adopts {@code next} before its next batch, and the
   * reload goes on meanwhile.
   */
  void reconfigure(Encoder<ILoggingEvent> next, Filter<ILoggingEvent> filter) {
    Encoder<ILoggingEvent> unused = pending.getAndSet(next);
    if (unused != null) {
      unused.stop(); // an earlier reload's, never adopted
    }
    clearAllFilters();
    if (filter != null) {
      addFilter(filter);
    }
    if (writing.tryLock()) {
      try {
        adoptPending();
      } finally {
        writing.unlock();
      }
    }
  }

  /** Under {@code writing}: the reload's encoder, if one is pending, becomes the encoder. */
  private void adoptPending() {
    Encoder<ILoggingEvent> next = pending.getAndSet(null);
    if (next != null) {
      Encoder<ILoggingEvent> previous = encoder;
      encoder = next;
      previous.stop();
    }
  }

  /**
   * At the JVM's exit: drains what is queued, then writes every later line on its caller's thread
   * (the appender stays started). Idempotent.
   */
  void writeThrough() {
    endWriter();
    throughCaller = true;
    writeNow(null);
  }

  /**
   * Writes out every line queued so far on the calling thread, after the batch the writer may be
   * writing (waiting for it at most {@value #STOP_WAIT_MS} ms).
   */
  void flush() {
    writeNow(null);
  }

  private void endWriter() {
    running = false;
    Thread w = writer;
    if (w == null) {
      return;
    }
    LockSupport.unpark(w);
    try {
      w.join(STOP_WAIT_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void writeLoop() {
    long park = BUSY_PARK_MS;
    while (true) {
      boolean last = !running;
      int written = 0;
      writing.lock();
      try {
        written = drain();
      } finally {
        writing.unlock();
      }
      if (last) {
        return;
      }
      park = written > 0 ? BUSY_PARK_MS : Math.min(park * 2, IDLE_PARK_MS);
      LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(park));
    }
  }

  /** On the caller's thread after the exit's drain; {@code event} null: only the queue's lines. */
  private void writeNow(ILoggingEvent event) {
    try {
      // Once the output has stalled a caller, later callers do not wait for it again.
      if (!(stalled ? writing.tryLock() : writing.tryLock(STOP_WAIT_MS, TimeUnit.MILLISECONDS))) {
        stalled = true;
        if (event != null) {
          dropped();
        }
        return;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      if (event != null) {
        dropped();
      }
      return;
    }
    try {
      if (event != null && !queue.offer(event)) {
        dropped();
      }
      drain();
    } finally {
      writing.unlock();
    }
  }

  private void dropped() {
    unreported.incrementAndGet();
    DROPPED_TOTAL.incrementAndGet();
  }

  /** Under {@code writing}: encodes and writes every queued line; returns how many. */
  private int drain() {
    int total = 0;
    while (true) {
      adoptPending();
      int taken = queue.drainTo(batch, 512);
      long dropped = unreported.getAndSet(0);
      if (taken == 0 && dropped == 0) {
        return total;
      }
      bytes.reset();
      if (dropped > 0) {
        bytes.writeBytes(encoder.encode(droppedLine(dropped)));
      }
      try {
        for (ILoggingEvent e : batch) {
          try {
            bytes.writeBytes(encoder.encode(e));
          } catch (RuntimeException failed) {
            // One line that cannot be encoded is lost alone: the writer and the lines after it
            // go on (an escaping failure would end the writer and every later line with it).
            addError("could not encode a log line", failed);
          }
        }
      } finally {
        batch.clear();
      }
      total += taken;
      try {
        OutputStream out = output.get();
        bytes.writeTo(out);
        out.flush();
      } catch (IOException | RuntimeException e) {
        // The output is gone (a closed stream): nothing to tell it; Logback keeps the status.
        addError("could not write log lines", e);
      }
    }
  }

  private ILoggingEvent droppedLine(long dropped) {
    LoggingEvent e = new LoggingEvent(QueuedConsoleAppender.class.getName(),
        ((LoggerContext) getContext()).getLogger(LogSetup.class), Level.WARN,
        "{} log lines dropped: the log output did not keep up", null, new Object[] {dropped});
    e.prepareForDeferredProcessing();
    return e;
  }
}
