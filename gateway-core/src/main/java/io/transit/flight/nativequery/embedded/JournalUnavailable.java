package io.transit.flight.nativequery.embedded;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A journal that could not answer a read (or a release): the caller's UNAVAILABLE {@code
 * query.journal_unavailable} with the SQL facts every journal failure carries ({@link
 * EmbeddedEngine#sqlFacts}), and the operator's log line with the journal's own error. A failing
 * journal fails every call, so at most one line is written every ten seconds, naming the calls
 * left out since; until 2026-12-07 none was, and only the access log's codes showed a lost or
 * full journal.
 *
 * <p>One per engine (its journal), shared by the engine's rights ledger and result reader, so
 * that one engine's failing journal never silences another's lines in the same process.
 *
 * <p>Threads: any (calls' threads, the retention sweep); the limiter is two atomics.
 */
final class JournalUnavailable {
  private static final Logger log = LoggerFactory.getLogger(JournalUnavailable.class);
  private static final long EVERY_NANOS = TimeUnit.SECONDS.toNanos(10);
  private final AtomicLong nextLine = new AtomicLong(System.nanoTime());
  private final AtomicLong leftOut = new AtomicLong();

  GatewayException of(String message, SQLException e) {
    long now = System.nanoTime();
    long next = nextLine.get();
    if (now - next >= 0 && nextLine.compareAndSet(next, now + EVERY_NANOS)) {
      long skipped = leftOut.getAndSet(0);
      log.warn("{}: {}{}", message, e.toString(),
          skipped == 0 ? "" : " (" + skipped + " more such failures since the last line)");
    } else {
      leftOut.incrementAndGet();
    }
    return EmbeddedEngine.sqlFacts(
        new GatewayException(Cause.TRANSPORT, "query.journal_unavailable", message, e), e);
  }
}
