package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.proto.QueryStatus;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The journal's lease rows, through two connections on one SQLite file acting as two replicas:
 * claims exclude each other until expiry, each claim is a new attempt, renewals and finishes of an
 * older attempt are fenced and change nothing, and an older journal gains the columns at open.
 */
class SqliteJournalLeaseTest {
  @TempDir Path dir;

  private static final long A = 0x1111;
  private static final long B = 0x2222;
  private static final byte[] SHA = new byte[32];

  private static QueryStatus succeeded(long correlation, long rows) {
    return QueryStatus.newBuilder()
        .setCorrelation(correlation)
        .setPrincipal(7)
        .setNamespace(correlation) // as accept() inserts it
        .setState(QueryStatus.State.SUCCEEDED)
        .setManifestSha256(com.google.protobuf.ByteString.copyFrom(new byte[32]))
        .setTotalRows(rows)
        .build();
  }

  private static long accept(SqliteJournal j) throws Exception {
    return j.transaction(() -> {
      long c = j.allocateCorrelation();
      j.insertAccepted(c, 7, c, SHA);
      return c;
    });
  }

  @Test
  void claimsExcludeEachOtherUntilExpiryAndOlderAttemptsAreFenced() throws Exception {
    Path file = dir.resolve("journal.sqlite");
    try (SqliteJournal a = SqliteJournal.open(file); SqliteJournal b = SqliteJournal.open(file)) {
      long q = accept(a);
      // Never claimed: expired for everyone.
      assertEquals(List.of(q), b.transaction(() -> b.expiredLeases(1_000, 10)));
      assertEquals(OptionalLong.of(1), a.transaction(() -> a.claim(q, A, "a/1", 1_000, 11_000)));
      assertEquals(List.of(), b.transaction(() -> b.expiredLeases(10_999, 10)));
      assertEquals(OptionalLong.empty(), b.transaction(() -> b.claim(q, B, "b/2", 10_999, 20_999)));
      // A renewal moves the expiry; B still cannot claim past the old one.
      assertTrue(a.transaction(() -> a.renew(q, A, 1, 15_000)));
      assertEquals(OptionalLong.empty(), b.transaction(() -> b.claim(q, B, "b/2", 12_000, 22_000)));
      // Expired: B claims attempt 2 and A is fenced for renewals and for its finish.
      assertEquals(List.of(q), b.transaction(() -> b.expiredLeases(15_000, 10)));
      assertEquals(OptionalLong.of(2), b.transaction(() -> b.claim(q, B, "b/2", 15_000, 25_000)));
      assertFalse(a.transaction(() -> a.renew(q, A, 1, 30_000)));
      assertFalse(a.transaction(() -> a.finish(succeeded(q, 99), SHA, new byte[] {1}, 5, 16_000, 1)));
      assertEquals(QueryStatus.State.ACCEPTED,
          b.transaction(() -> b.query(q)).orElseThrow().status().getState());
      assertEquals(List.of(B, 2L, 25_000L), lease(file, q));
      // The current attempt publishes; afterwards nothing can claim or renew it.
      assertTrue(b.transaction(() -> b.finish(succeeded(q, 3), SHA, new byte[] {2}, 5, 17_000, 2)));
      JournalStore.SavedQuery saved = a.transaction(() -> a.query(q)).orElseThrow();
      assertEquals(3, saved.status().getTotalRows());
      assertEquals(1, saved.manifest().length);
      assertEquals(2, saved.manifest()[0]);
      assertEquals(OptionalLong.empty(), a.transaction(() -> a.claim(q, A, "a/1", 90_000, 99_000)));
      assertFalse(b.transaction(() -> b.renew(q, B, 2, 99_000)));
      assertFalse(b.transaction(() -> b.finish(succeeded(q, 4), SHA, new byte[] {3}, 5, 18_000, 2)));
      assertEquals(List.of(), a.transaction(() -> a.expiredLeases(Long.MAX_VALUE, 10)));
    }
  }

  @Test
  void expiredLeasesComeOldestFirstUpToTheLimitAndAGivenUpLeaseIsClaimableAtOnce()
      throws Exception {
    try (SqliteJournal j = SqliteJournal.open(dir.resolve("journal.sqlite"))) {
      long q1 = accept(j);
      long q2 = accept(j);
      long q3 = accept(j);
      assertEquals(OptionalLong.of(1), j.transaction(() -> j.claim(q1, A, "a", 0, 50_000)));
      assertEquals(List.of(q2, q3), j.transaction(() -> j.expiredLeases(100, 10)));
      assertEquals(List.of(q2), j.transaction(() -> j.expiredLeases(100, 1)));
      // Renewing to 0 gives the lease up (what a closing engine does).
      assertTrue(j.transaction(() -> j.renew(q1, A, 1, 0)));
      assertEquals(List.of(q1, q2, q3), j.transaction(() -> j.expiredLeases(100, 10)));
      assertEquals(OptionalLong.of(2), j.transaction(() -> j.claim(q1, B, "b", 100, 50_100)));
    }
  }

  @Test
  void anOlderJournalGainsTheLeaseColumnsAndKeepsItsFinishTimes() throws Exception {
    Path file = dir.resolve("journal.sqlite");
    // The queries table as the retention release wrote it: no lease columns.
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE queries (correlation BIGINT PRIMARY KEY,"
          + " principal BIGINT NOT NULL, namespace BIGINT NOT NULL, bundle_sha256 BLOB NOT NULL,"
          + " state VARCHAR(16) NOT NULL, code VARCHAR(64) NOT NULL, stage VARCHAR(32) NOT NULL,"
          + " message VARCHAR(512) NOT NULL, manifest_sha256 BLOB, total_rows BIGINT NOT NULL,"
          + " limit_amount BIGINT NOT NULL, required_amount BIGINT NOT NULL,"
          + " failed_column VARCHAR(256) NOT NULL, released INTEGER NOT NULL, manifest BLOB,"
          + " finished_ms BIGINT NOT NULL DEFAULT 0, result_bytes BIGINT NOT NULL DEFAULT 0)");
      s.execute("INSERT INTO queries VALUES (1, 7, 1, x'00', 'SUCCEEDED', '', '', '', NULL, 0,"
          + " 0, 0, '', 0, NULL, 1234, 0)");
      s.execute("INSERT INTO queries VALUES (2, 7, 2, x'00', 'ACCEPTED', '', '', '', NULL, 0,"
          + " 0, 0, '', 0, NULL, 0, 0)");
    }
    try (SqliteJournal j = SqliteJournal.open(file)) {
      assertEquals(List.of(1234L), j.transaction(() -> j.oldestRetained(10)).stream()
          .map(JournalStore.Retained::finishedMillis).toList());
      // The unfinished query of the old journal has no lease: any engine takes it over at once.
      assertEquals(List.of(2L), j.transaction(() -> j.expiredLeases(1, 10)));
      assertEquals(OptionalLong.of(1), j.transaction(() -> j.claim(2, A, "a", 1, 10_001)));
    }
  }

  /** The lease columns as an operator reads them: owner, attempt, expiry. */
  static List<Long> lease(Path file, long correlation) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT lease_owner, attempt, lease_until_ms FROM queries"
            + " WHERE correlation = " + correlation)) {
      assertTrue(r.next(), "no query " + correlation);
      return List.of(r.getLong(1), r.getLong(2), r.getLong(3));
    }
  }
}
