package io.transit.flight.query;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Random SQL — comments holding quotes and brackets, strings and quoted identifiers with doubled
 * quotes and backslashes, nesting up to far past the bound, long lists and chains — through the
 * real compiler. Every compile must answer (a plan or a bounded refusal, never another
 * exception); the slowest compile is printed, beside the daemon's default parse budget, for
 * docs/security.md. Speed is not asserted: a compile only fails the test past {@link #HANG_MS},
 * as a hang would.
 */
class ParserFuzzTest {
  private static final int CASES = 3000;
  /** The daemon's default parse budget: reported beside the slowest compile, not asserted. */
  private static final long BUDGET_MS = 2000;
  /** Far past any healthy compile: only a hang (or a runaway parse) reaches it. */
  private static final long HANG_MS = 30_000;

  private static final String[] COLUMNS = {"id", "Fare", "\"Fare\"", "trips.id", "t.id", "ID",
      "\"i\"\"d\"", "`id`", "seats"};
  private static final String[] LITERALS = {"1", "-7", "'x'", "'it''s'", "'a\\'", "N'('",
      "9223372036854775808", "1.5", "NULL", "TRUE", "DATE '2024-02-29'"};
  private static final String[] COMMENTS = {"-- '\n", "-- \"(\n", "/* ' ( \" */", "// `\n",
      "/* ((( */", "--\r", "/**/"};

  private final Random random = new Random(1414);

  @Test
  void everyCompileAnswers() {
    long maxNanos = 0;
    String slowest = "";
    int plans = 0;
    // Timed on the compiling thread's CPU, after one untimed compile: a loaded host's
    // scheduling, a collection and the parser's class loading are not the parse's cost.
    ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
    try {
      QueryCompiler.compile("SELECT COUNT(*) FROM trips", QueryCompilerTest.TABLE);
    } catch (GatewayException e) {
      // Only warming up.
    }
    for (int i = 0; i < CASES; i++) {
      String sql = statement();
      long start = cpu.getCurrentThreadCpuTime();
      try {
        QueryCompiler.compile(sql, QueryCompilerTest.TABLE);
        plans++;
      } catch (GatewayException e) {
        assertTrue(e.kind() != Cause.INTERNAL, () -> "internal for " + sql);
        assertTrue(e.getMessage().getBytes(StandardCharsets.US_ASCII).length <= 128);
      }
      long took = cpu.getCurrentThreadCpuTime() - start;
      if (took > maxNanos) {
        maxNanos = took;
        slowest = sql.length() > 60 ? sql.substring(0, 60) + "..." : sql;
      }
      String shown = sql.length() > 200 ? sql.substring(0, 200) + "..." : sql;
      assertTrue(took < HANG_MS * 1_000_000,
          () -> "compile took " + took / 1_000_000 + " ms: " + shown);
    }
    assertTrue(plans > CASES / 20, "too few valid statements to mean anything: " + plans);
    System.out.printf("parser fuzz: %d cases, %d plans, slowest compile %.1f ms of CPU (%s);"
        + " default parse budget %d ms%n", CASES, plans, maxNanos / 1e6,
        slowest.replace('\n', ' ').replace('\r', ' '), BUDGET_MS);
  }

  private String statement() {
    if (random.nextInt(60) == 0) {
      return atTheBounds();
    }
    StringBuilder sb = new StringBuilder("SELECT ");
    sb.append(random.nextInt(8) == 0 ? "COUNT(*)" : pick(COLUMNS)).append(noise());
    int extra = random.nextInt(4) == 0 ? random.nextInt(200) : random.nextInt(3);
    for (int i = 0; i < extra; i++) {
      sb.append(", ").append(pick(COLUMNS));
    }
    sb.append(" FROM ").append(random.nextBoolean() ? "trips" : "trips t").append(noise());
    if (random.nextInt(5) != 0) {
      sb.append(" WHERE ").append(predicate(random.nextInt(4) == 0 ? 45 : 12, 0));
    }
    if (random.nextInt(6) == 0) {
      sb.append(" LIMIT ").append(random.nextInt(100));
    }
    if (random.nextInt(10) == 0) {
      // Raw junk: unbalanced quotes, brackets and comment openers anywhere.
      String junk = "'\"`()[]{}-/*\\$;N ";
      for (int i = random.nextInt(30); i > 0; i--) {
        sb.insert(random.nextInt(sb.length()), junk.charAt(random.nextInt(junk.length())));
      }
    }
    return sb.toString();
  }

  /** The slowest shape the guard lets through: full-depth groups up to the bracket bound. */
  private String atTheBounds() {
    int depth = SqlGuard.MAX_NESTING - random.nextInt(4);
    int groups = 1 + random.nextInt(SqlGuard.MAX_BRACKETS / depth);
    StringBuilder sb = new StringBuilder("SELECT id FROM trips WHERE id = 1 ").append(noise());
    for (int i = 0; i < groups; i++) {
      sb.append(" OR ").append("(".repeat(depth)).append(leaf()).append(")".repeat(depth));
    }
    return sb.toString();
  }

  private String predicate(int budget, int depth) {
    int kind = random.nextInt(10);
    if (budget > 0 && kind < 3) {
      return "(" + noise() + predicate(budget - 1, depth + 1) + ")";
    }
    if (budget > 0 && kind < 5) {
      return predicate(budget / 2, depth) + (random.nextBoolean() ? " AND " : " OR ") + noise()
          + predicate(budget / 2, depth);
    }
    if (kind == 5) {
      return "NOT ".repeat(1 + random.nextInt(random.nextInt(20) == 0 ? 600 : 3)) + leaf();
    }
    if (kind == 6) {
      StringBuilder list = new StringBuilder(pick(COLUMNS)).append(random.nextBoolean() ? " NOT" : "")
          .append(" IN (");
      int n = random.nextInt(20) == 0 ? random.nextInt(2500) : random.nextInt(4);
      for (int i = 0; i < n; i++) {
        list.append(i > 0 ? ", " : "").append(pick(LITERALS));
      }
      return list.append(")").toString();
    }
    return leaf();
  }

  private String leaf() {
    String[] ops = {" = ", " <> ", " < ", " >= ", " BETWEEN 1 AND ", " IS NULL", " IS NOT NULL"};
    String op = pick(ops);
    return pick(COLUMNS) + op + (op.startsWith(" IS") ? "" : pick(LITERALS)) + noise();
  }

  private String noise() {
    return random.nextInt(4) == 0 ? " " + pick(COMMENTS) + " " : "";
  }

  private String pick(String[] options) {
    return options[random.nextInt(options.length)];
  }
}
