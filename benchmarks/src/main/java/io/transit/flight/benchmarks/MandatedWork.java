package io.transit.flight.benchmarks;

import io.transit.flight.admission.CommandChain;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.nativequery.embedded.DemoData;
import io.transit.flight.nativequery.embedded.DuckSettings;
import io.transit.flight.nativequery.embedded.EmbeddedEngine;
import io.transit.flight.proto.TableDeclaration;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.LongSupplier;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/**
 * Times, alone, the work the profile and the architecture require of every retained segment and
 * every statement, so {@code scripts/bench} can set each P1/P2 target beside its floor measured in
 * the same run on the same machine:
 *
 * <ul>
 *   <li>a segment's SHA-256 (captured bytes are verified before conversion and one bounded batch
 *       is resident, so a stream digests its segments one after another), alone and after the
 *       read of the segment file from the page cache;
 *   <li>Ed25519 signing and verification over a 32-byte message (commands, the bundle's proof and
 *       the ticket each cost one of both);
 *   <li>the cheapest durable record: one small row committed to SQLite in WAL mode with {@code
 *       synchronous=FULL} and a new journal's page size, the journal's settings, on the
 *       filesystem given by {@code --dir};
 *   <li>the cheapest deferred record, which each command before the submit needs (it is recorded
 *       before the next is sent): the same row committed with {@code synchronous=NORMAL}, no
 *       fsync;
 *   <li>with {@code --parquet FILE}, the engine's run of a statement alone: DuckDB executing a
 *       prepared {@code SELECT COUNT(*)} over a {@code read_parquet} scan of FILE, under the
 *       engine's session settings ({@link DuckSettings#apply}), and reading its row.
 * </ul>
 *
 * <p>Each figure is the median of single operations after a warm-up of the same length. The
 * counts per statement come from the real {@link CommandChain} of a {@code SELECT COUNT(*)}
 * bundle. Prints one JSON object on stdout. Single-threaded; exits with every buffer released.
 *
 * <p>Usage: {@code MandatedWork --dir DIR [--parquet FILE] [--seconds S] [--serve [--warmup W]]}
 * (DIR is created and emptied of its own files at the end). With {@code --serve} it times only a
 * statement's operations (sign, verify, durable and deferred commit, the engine's run with {@code
 * --parquet}) and the rest of a statement's work besides its round trip as one sequence ({@link
 * StatementWork#sequence}): warmed up once for W seconds each (default S), then one slice of S
 * seconds each per line read on stdin, answered with one JSON line (the medians, and every
 * sequence's time), until stdin ends. {@code scripts/bench} asks
 * for a slice between P2's blocks of statements, so the floor is timed in the same minutes as the
 * statements it bounds: this host's speed drifts over minutes by as much as the target's margin.
 */
public final class MandatedWork {
  private static final int PAYLOAD_BYTES_PER_ROW = Fixtures.COLUMNS.size() * Long.BYTES;

  private MandatedWork() {}

  public static void main(String[] args) throws Exception {
    Path dir = null;
    Path parquet = null;
    double seconds = 2;
    double warmup = -1;
    boolean serve = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--dir" -> dir = Path.of(args[++i]);
        case "--parquet" -> parquet = Path.of(args[++i]);
        case "--seconds" -> seconds = Double.parseDouble(args[++i]);
        case "--serve" -> serve = true;
        case "--warmup" -> warmup = Double.parseDouble(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (dir == null) {
      throw new IllegalArgumentException("--dir is required");
    }
    Files.createDirectories(dir);
    long budget = (long) (seconds * 1e9);
    if (serve) {
      serve(dir, parquet, warmup < 0 ? budget : (long) (warmup * 1e9), budget);
      return;
    }
    StringBuilder json = new StringBuilder("{");
    try (BufferAllocator allocator = new RootAllocator()) {
      segmentWork(allocator, dir, budget, json);
    }
    try (StatementWork work = new StatementWork(dir, parquet)) {
      json.append("\"ed25519\":{\"sign_ns\":").append(median(budget, budget, work::sign))
          .append(",\"verify_ns\":").append(median(budget, budget, work::verify)).append("},");
      json.append("\"durable_commit_ns\":").append(median(budget, budget, work::commit))
          .append(",\"deferred_commit_ns\":")
          .append(median(budget, budget, work::deferredCommit)).append(',');
      if (parquet != null) {
        json.append("\"engine_run_ns\":").append(median(budget, budget, work::engineRun))
            .append(',');
      }
    }
    perStatement(json);
    json.append("\"seconds_per_figure\":").append(seconds).append('}');
    System.out.println(json);
  }

  /** The {@code --serve} loop: one slice of the statement's operations per line on stdin. */
  private static void serve(Path dir, Path parquet, long warmup, long budget)
      throws IOException, SQLException {
    try (StatementWork work = new StatementWork(dir, parquet);
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      median(warmup, 0, work::sign);
      median(warmup, 0, work::verify);
      median(warmup, 0, work::commit);
      median(warmup, 0, work::deferredCommit);
      if (parquet != null) {
        median(warmup, 0, work::engineRun);
      }
      PerStatement per = PerStatement.of();
      LongSupplier sequence = () -> work.sequence(per);
      median(warmup, 0, sequence);
      System.out.println("{\"ready\":true}");
      while (in.readLine() != null) {
        System.out.println("{\"sign_ns\":" + median(0, budget, work::sign)
            + ",\"verify_ns\":" + median(0, budget, work::verify)
            + ",\"durable_commit_ns\":" + median(0, budget, work::commit)
            + ",\"deferred_commit_ns\":" + median(0, budget, work::deferredCommit)
            + (parquet == null ? "" : ",\"engine_run_ns\":" + median(0, budget, work::engineRun))
            + ",\"sequence_us\":" + samplesMicros(budget, sequence)
            + "}");
      }
    }
  }

  /** SHA-256 of one gateway-shaped segment held in Arrow memory; then read from file + SHA-256. */
  private static void segmentWork(BufferAllocator allocator, Path dir, long budget,
      StringBuilder json) throws IOException {
    byte[] segment = Fixtures.segment(allocator);
    Path file = dir.resolve("segment.arrow");
    Files.write(file, segment);
    try (ArrowBuf buf = allocator.buffer(segment.length);
        FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
      buf.setBytes(0, segment);
      byte[] expected = Digests.sha256(segment);
      long digestNs = median(budget, budget, () -> {
        long t0 = System.nanoTime();
        byte[] d = Digests.sha256(buf, segment.length);
        long t = System.nanoTime() - t0;
        check(Arrays.equals(d, expected), "digest differs");
        return t;
      });
      long readDigestNs = median(budget, budget, () -> {
        long t0 = System.nanoTime();
        ByteBuffer target = buf.nioBuffer(0, segment.length);
        try {
          long pos = 0;
          while (target.hasRemaining()) {
            int n = channel.read(target, pos);
            check(n > 0, "segment file shorter than written");
            pos += n;
          }
        } catch (IOException e) {
          throw new IllegalStateException(e);
        }
        byte[] d = Digests.sha256(buf, segment.length);
        long t = System.nanoTime() - t0;
        check(Arrays.equals(d, expected), "digest differs after read");
        return t;
      });
      long payload = (long) Fixtures.SEGMENT_ROWS * PAYLOAD_BYTES_PER_ROW;
      json.append("\"segment\":{\"rows\":").append(Fixtures.SEGMENT_ROWS)
          .append(",\"bytes\":").append(segment.length)
          .append(",\"payload_bytes\":").append(payload)
          .append(",\"sha256_ns\":").append(digestNs)
          .append(",\"read_sha256_ns\":").append(readDigestNs)
          .append(",\"sha256_payload_gb_per_s\":").append(fmt(payload / (double) digestNs))
          .append(",\"read_sha256_payload_gb_per_s\":")
          .append(fmt(payload / (double) readDigestNs)).append("},");
    } finally {
      Files.deleteIfExists(file);
    }
  }

  /**
   * A statement's single operations: Ed25519 over a 32-byte message (commands, proofs and tickets
   * sign a SHA-256); one small row per transaction committed with the journal's durability
   * settings (WAL, {@code synchronous=FULL}) in {@code dir}, or deferred ({@code
   * synchronous=NORMAL}) on a second connection to the same file; with a Parquet file, the
   * engine's run of a {@code COUNT(*)} over it. Removes its files in {@code dir} at close.
   */
  private static final class StatementWork implements AutoCloseable {
    private final Ed25519.KeyPair key = Fixtures.KEY;
    private final byte[] message = Digests.sha256(new byte[] {1, 2, 3});
    private final byte[] signature = key.sign(message);
    private final byte[] body = new byte[160];
    private final Path dir;
    private final Connection connection;
    private final PreparedStatement insert;
    private final Connection deferred;
    private final PreparedStatement deferredInsert;
    private final Connection duck; // null without a Parquet file
    private final PreparedStatement count;
    private long rows = -1;
    private int commitsSinceCheckpoint;

    StatementWork(Path dir, Path parquet) throws SQLException, IOException {
      this.dir = dir;
      removeFiles();
      connection = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(DB));
      try (Statement s = connection.createStatement()) {
        s.execute("PRAGMA page_size=" + EmbeddedEngine.NEW_JOURNAL_PAGE_BYTES);
        s.execute("PRAGMA journal_mode=WAL");
        s.execute("PRAGMA synchronous=FULL");
        s.execute("PRAGMA wal_autocheckpoint=0");
        s.execute("CREATE TABLE record(id INTEGER PRIMARY KEY, body BLOB NOT NULL)");
      }
      connection.setAutoCommit(false);
      insert = connection.prepareStatement("INSERT INTO record(body) VALUES (?)");
      deferred = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(DB));
      try (Statement s = deferred.createStatement()) {
        s.execute("PRAGMA synchronous=NORMAL");
        s.execute("PRAGMA wal_autocheckpoint=0");
      }
      deferred.setAutoCommit(false);
      deferredInsert = deferred.prepareStatement("INSERT INTO record(body) VALUES (?)");
      if (parquet == null) {
        duck = null;
        count = null;
        return;
      }
      duck = DriverManager.getConnection("jdbc:duckdb:");
      DuckSettings.defaults().apply(duck, dir);
      count = duck.prepareStatement(
          "SELECT COUNT(*) FROM read_parquet('" + parquet.toAbsolutePath().toString()
              .replace("'", "''") + "')");
    }

    long sign() {
      long t0 = System.nanoTime();
      byte[] s = key.sign(message);
      long t = System.nanoTime() - t0;
      check(s.length == Ed25519.SIGNATURE_BYTES, "signature length");
      return t;
    }

    long verify() {
      long t0 = System.nanoTime();
      boolean ok = key.publicKey().verify(message, signature);
      long t = System.nanoTime() - t0;
      check(ok, "signature does not verify");
      return t;
    }

    long commit() {
      long t = commit(connection, insert);
      checkpointIfDue(1);
      return t;
    }

    long deferredCommit() {
      long t = commit(deferred, deferredInsert);
      checkpointIfDue(1);
      return t;
    }

    private long commit(Connection c, PreparedStatement p) {
      try {
        long t0 = System.nanoTime();
        p.setBytes(1, body);
        p.executeUpdate();
        c.commit();
        return System.nanoTime() - t0;
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }

    /**
     * Untimed, as the journal's own checkpoints run on a thread of their own ({@code
     * WalCheckpointer}): every 128 commits a PASSIVE checkpoint, so that no timed commit copies
     * the WAL into the database (SQLite's automatic checkpoint, off here, would inside a commit).
     */
    private void checkpointIfDue(int commits) {
      commitsSinceCheckpoint += commits;
      if (commitsSinceCheckpoint < COMMITS_PER_CHECKPOINT) {
        return;
      }
      commitsSinceCheckpoint = 0;
      try (Statement s = connection.createStatement()) {
        s.execute("PRAGMA wal_checkpoint(PASSIVE)");
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }

    /**
     * A statement's mandated work besides the round trip, one after another: the commands and
     * the bundle's proof signed and verified, the records before the submit (deferred), the
     * engine's run, the durable commit. The ticket's signature is the GetTableTypes round
     * trip's, so it is not in here. Timed as one, so that its spread is the mandated work's own
     * on this host, which the floor's p99 takes.
     */
    long sequence(PerStatement per) {
      long t0 = System.nanoTime();
      for (int i = 0; i < per.signs() - 1; i++) {
        sign();
      }
      for (int i = 0; i < per.verifies() - per.ticketVerifies(); i++) {
        verify();
      }
      for (int i = 0; i < per.deferredCommits(); i++) {
        commit(deferred, deferredInsert);
      }
      if (count != null) {
        engineRun();
      }
      for (int i = 0; i < per.durableCommits(); i++) {
        commit(connection, insert);
      }
      long t = System.nanoTime() - t0;
      checkpointIfDue(per.deferredCommits() + per.durableCommits());
      return t;
    }

    /** The statement's SQL run in DuckDB, its one row read; every run must count the same. */
    long engineRun() {
      try {
        long t0 = System.nanoTime();
        long n;
        try (ResultSet r = count.executeQuery()) {
          check(r.next(), "COUNT(*) returned no row");
          n = r.getLong(1);
        }
        long t = System.nanoTime() - t0;
        check(rows < 0 || n == rows, "COUNT(*) changed");
        rows = n;
        return t;
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public void close() throws SQLException, IOException {
      try (Connection c = connection; PreparedStatement i = insert; Connection d = deferred;
          PreparedStatement di = deferredInsert; Connection k = duck; PreparedStatement n = count) {
        // Only closing: each in reverse order (statements first), the rest even if one fails.
      } finally {
        removeFiles();
      }
    }

    private void removeFiles() throws IOException {
      for (String suffix : new String[] {"", "-wal", "-shm"}) {
        Files.deleteIfExists(dir.resolve(DB + suffix));
      }
      Path spill = dir.resolve("duckdb-tmp");
      if (Files.isDirectory(spill)) {
        try (var left = Files.list(spill)) {
          for (Path p : (Iterable<Path>) left::iterator) {
            Files.deleteIfExists(p);
          }
        }
        Files.delete(spill);
      }
    }

    private static final String DB = "commit-floor.sqlite";
    /** The journal's checkpoint cadence, {@code WalCheckpointer.COMMITS_PER_CHECKPOINT}. */
    private static final int COMMITS_PER_CHECKPOINT = 128;
  }

  /**
   * How many of each a statement costs, from the real chain of a one-row statement. One durable
   * commit (docs/admission.md §10): the submit's when its early result is ready (it then carries
   * the result too), else the terminal one; either holds a small result's segment with its
   * manifest and status and makes the chain's deferred records durable. Every command before the
   * submit is recorded (deferred, docs/admission.md §10) before the next is sent: the profile's
   * "recorded requester outcome". Admission signs every command and the bundle's proof, the
   * engine verifies both, and GetFlightInfo signs the ticket DoGet checks: presented to the
   * gateway that issued it, the ticket's signature is recognised rather than verified on the
   * curve (docs/tickets.md, check 4), so it counts as no verification, here and in the
   * GetTableTypes round trip.
   */
  record PerStatement(int commands, int durableCommits, int deferredCommits, int signs,
      int verifies, int ticketVerifies) {
    static PerStatement of() {
      TableDeclaration table = DemoData.declaration(DemoData.PRIMITIVE, 1);
      int commands = CommandChain.derive(
              Fixtures.bundle(table, "SELECT COUNT(*) FROM " + DemoData.PRIMITIVE),
              Fixtures.PRINCIPAL, Fixtures.KEY, 1, CommandChain.DEFAULT_PART_BYTES)
          .commands().size();
      return new PerStatement(commands, 1, commands - 1, commands + 2, commands + 1, 0);
    }
  }

  private static void perStatement(StringBuilder json) {
    PerStatement per = PerStatement.of();
    json.append("\"per_statement\":{\"commands\":").append(per.commands())
        .append(",\"durable_commits\":").append(per.durableCommits())
        .append(",\"deferred_commits\":").append(per.deferredCommits())
        .append(",\"signs\":").append(per.signs())
        .append(",\"verifies\":").append(per.verifies())
        .append(",\"ticket_verifies\":").append(per.ticketVerifies()).append("},");
  }

  /** Runs {@code op} for {@code budget} ns (at least 5 times): each run's figure in µs. */
  private static String samplesMicros(long budget, LongSupplier op) {
    StringBuilder out = new StringBuilder("[");
    long end = System.nanoTime() + budget;
    for (int n = 0; n < 5 || System.nanoTime() - end < 0; n++) {
      out.append(n == 0 ? "" : ",").append(fmtMicros(op.getAsLong()));
    }
    return out.append(']').toString();
  }

  private static String fmtMicros(long nanos) {
    return String.format(Locale.ROOT, "%.1f", nanos / 1e3);
  }

  /** Runs {@code op} for {@code warmup} ns untimed, then for {@code budget} ns; the median. */
  private static long median(long warmup, long budget, LongSupplier op) {
    long end = System.nanoTime() + warmup;
    while (System.nanoTime() - end < 0) {
      op.getAsLong();
    }
    long[] samples = new long[1024];
    int n = 0;
    end = System.nanoTime() + budget;
    while (n < 5 || System.nanoTime() - end < 0) {
      if (n == samples.length) {
        samples = Arrays.copyOf(samples, n * 2);
      }
      samples[n++] = op.getAsLong();
    }
    long[] sorted = Arrays.copyOf(samples, n);
    Arrays.sort(sorted);
    return sorted[n / 2];
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new IllegalStateException(what);
    }
  }

  private static String fmt(double v) {
    return String.format(Locale.ROOT, "%.4f", v);
  }
}
