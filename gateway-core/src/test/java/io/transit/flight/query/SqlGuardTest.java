package io.transit.flight.query;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.transit.flight.diagnostic.GatewayException;
import java.util.Random;
import net.sf.jsqlparser.parser.CCJSqlParserTokenManager;
import net.sf.jsqlparser.parser.SimpleCharStream;
import net.sf.jsqlparser.parser.StringProvider;
import net.sf.jsqlparser.parser.Token;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SqlGuardTest {
  private static final String HEAD = "SELECT id FROM t WHERE ";

  private static GatewayException refused(String sql, String code) {
    GatewayException e = assertThrows(GatewayException.class, () -> SqlGuard.check(sql));
    assertEquals(code, e.code(), e::getMessage);
    assertTrue(e.getMessage().length() <= 128 && e.getMessage().chars().allMatch(c -> c >= 0x20 && c < 0x7f));
    return e;
  }

  private static void tooComplex(String sql, String bound, int limit, int required) {
    GatewayException e = refused(sql, "query.too_complex");
    assertEquals(Status.Code.INVALID_ARGUMENT, e.kind().code());
    assertEquals(bound, e.facts().get("bound"));
    assertEquals(limit, e.facts().get("limit"));
    assertEquals(required, e.facts().get("required"));
  }

  private static String nested(int depth) {
    return "(".repeat(depth) + "id = 2" + ")".repeat(depth);
  }

  /**
   * The parser's exponential shapes, each about a hundred characters within every bound: nested
   * CASE and subqueries took seconds to minutes to parse (2026-12-07, an audit of the compiler),
   * and an abandoned parse stopped only at the parser's next check. Refused before parsing, as
   * outside the profile; a word that merely contains them, or quoted text, is not.
   */
  @Test
  void caseAndASecondSelectAreRefusedBeforeParsing() {
    refused(HEAD + "((CASE ".repeat(16), "query.unsupported");
    refused(HEAD + "CASE (((((", "query.unsupported");
    refused("SELECT CASE WHEN id = 1 THEN 1 ELSE 0 END FROM t", "query.unsupported");
    GatewayException sub = refused(HEAD + "fare IN (SELECT ".repeat(14) + "1" + ")".repeat(14),
        "query.unsupported");
    assertEquals("unsupported: a subquery or a second SELECT", sub.getMessage());
    assertEquals("unsupported: UNION, INTERSECT or EXCEPT",
        refused("SELECT id FROM t UNION SELECT id FROM t", "query.unsupported").getMessage());
    refused("SELECT id FROM t; select id FROM t", "query.unsupported");
    for (String fine : new String[] {HEAD + "case_id = 1", HEAD + "\"case\" = 1",
        HEAD + "s = 'CASE SELECT'", HEAD + "id = 1 -- SELECT CASE", "SELECT selector FROM t"}) {
      SqlGuard.check(fine);
    }
  }

  @Test
  void nestingAtTheBoundPassesOneMoreIsRefusedWithTheFigure() {
    SqlGuard.check(HEAD + nested(SqlGuard.MAX_NESTING));
    tooComplex(HEAD + nested(33), "nesting", 32, 33);
    tooComplex(HEAD + "[".repeat(20) + "{".repeat(20), "nesting", 32, 40);
  }

  @Test
  void quotesInsideCommentsDoNotHideTheNestingThatFollows() {
    // Issue 14 finding 1: a quote inside a comment used to start a "string" that hid the rest.
    tooComplex(HEAD + "id = 1 -- '\nOR " + nested(800), "nesting", 32, 800);
    // // is refused outright (DuckDB divides where the parser comments): nothing it could hide.
    refused(HEAD + "id = 1 // \"\nOR " + nested(40), "query.unsupported");
    tooComplex(HEAD + "id = 1 /* ` ' \" */ OR " + nested(40), "nesting", 32, 40);
    tooComplex(HEAD + "id = 1 --x\rOR " + nested(40), "nesting", 32, 40);
  }

  @Test
  void bracketsInsideCommentsStringsAndQuotedIdentifiersAreNotCounted() {
    String hidden = "(".repeat(100);
    // Passed, and the parser sees each comment blanked and each quoted text as it was.
    assertEquals(HEAD + "id = 1 " + " ".repeat(103), SqlGuard.check(HEAD + "id = 1 -- " + hidden));
    assertEquals(HEAD + "id = 1 " + " ".repeat(106),
        SqlGuard.check(HEAD + "id = 1 /* " + hidden + " */"));
    for (String quoted : new String[] {"s = '" + hidden + "'", "s = 'it''s " + hidden + "'",
        "\"a\"\"" + hidden + "\" = 1", "`" + hidden + "` = 1", "s = N'" + hidden + "'"}) {
      assertEquals(HEAD + quoted, SqlGuard.check(HEAD + quoted));
    }
  }

  @Test
  void backslashIsNotAnEscapeSoTheStringEndsAtTheNextQuote() {
    // As in JSqlParser 5.3: 'a\' is a whole literal; what follows is counted.
    tooComplex(HEAD + "s = 'a\\' OR " + nested(40), "nesting", 32, 40);
    tooComplex(HEAD + "\"a\\\" = 1 OR " + nested(40), "nesting", 32, 40);
  }

  @Test
  void theParserSeesNoBackslashInsideAStringAndNoneOutside() {
    String seen = SqlGuard.check(HEAD + "s = 'it\\''s' AND \"a\\\" = 1");
    assertEquals(HEAD + "s = 'it" + SqlGuard.BACKSLASH + "''s' AND \"a\\\" = 1", seen);
    assertEquals("it\\''s", SqlGuard.restore("it" + SqlGuard.BACKSLASH + "''s"));
    refused(HEAD + "s = '" + SqlGuard.BACKSLASH + "'", "query.syntax");
  }

  @Test
  void blockCommentsDoNotNest() {
    // A block comment inside one: DuckDB nests them, the parser does not; refused.
    refused(HEAD + "/* /* */ " + nested(40) + " */", "query.unsupported");
  }

  @Test
  void commentsAreBlankedLineBreaksKept() {
    String sql = "SELECT id -- a (\nFROM t /* x\n y */ WHERE s = '--' -- z";
    String seen = SqlGuard.check(sql);
    assertEquals(sql.length(), seen.length());
    assertEquals("SELECT id " + " ".repeat(6) + "\nFROM t " + " ".repeat(4) + "\n"
        + " ".repeat(5) + " WHERE s = '--' " + " ".repeat(4), seen);
  }

  @Test
  void tokenAndBracketAndLengthBounds() {
    tooComplex(HEAD + "id IN (" + "1,".repeat(3000) + "1)", "tokens", 4096, 6010);
    tooComplex(HEAD + "(id = 1) OR ".repeat(600) + "id = 1", "brackets", 256, 600);
    tooComplex(HEAD + "s = '" + "x".repeat(20_000) + "'", "characters", 16_384, 20_029);
    // Comments count towards characters only.
    SqlGuard.check(HEAD + "id = 1 --" + " (".repeat(5000));
  }

  @ParameterizedTest
  @ValueSource(strings = {"s = 'open", "\"open = 1", "`open = 1", "id = 1 /* open", "s = 'a''"})
  void unterminatedLiteralsAndCommentsAreSyntaxErrors(String where) {
    refused(HEAD + where, "query.syntax");
  }

  @ParameterizedTest
  @ValueSource(strings = {"s = q'[a'b]'", "s = E'x'", "s = X'00'", "s = _utf8'x'", "s = $$x$$",
      "id = $1", "s = $tag$ ( $tag$", "s = rb'x'", "s = Nq'[x]'", "s = 1'x'", "id > 100 // 7",
      "id = 1 /* a /* b */ OR id = 2 -- */"})
  void lexicalFormsOutsideTheProfileAreRefusedBeforeParsing(String where) {
    GatewayException e = refused(HEAD + where, "query.unsupported");
    assertEquals(Status.Code.UNIMPLEMENTED, e.kind().code());
  }

  /**
   * The guard must never see less nesting than the parser will: random texts over the lexical
   * forms that matter, counted by the guard and by JSqlParser's own lexer over the text the
   * guard hands on. Wherever the parser's lexer reads the whole text, the depths agree.
   */
  @Test
  void guardDepthAgreesWithJsqlParsersLexer() {
    String[] pieces = {"(", ")", "[", "]", " ", "\n", "\r", "id", "1", "=", " OR ", "'", "''", "\"",
        "\"\"", "`", "--", "//", "/*", "*/", "\\", "N'", ",", "-", "/", "*", "DATE'", "OR'"};
    Random random = new Random(14);
    int compared = 0;
    for (int i = 0; i < 3000; i++) {
      StringBuilder sb = new StringBuilder(HEAD);
      int n = 1 + random.nextInt(40);
      for (int k = 0; k < n; k++) {
        sb.append(pieces[random.nextInt(pieces.length)]);
      }
      String sql = sb.toString();
      String seen;
      try {
        seen = SqlGuard.check(sql);
      } catch (GatewayException e) {
        continue;
      }
      Integer lexerDepth = lexerDepth(seen);
      if (lexerDepth != null) {
        compared++;
        assertEquals(lexerDepth, guardDepth(seen), () -> "depth differs for " + sql);
      }
    }
    assertTrue(compared > 500, "only " + compared + " texts compared");
  }

  /**
   * Max nesting as the guard counts it. The blanked text has no comments left, so a plain scan
   * outside quotes is the guard's view (the guard itself reports only refusals).
   */
  private static int guardDepth(String text) {
    int depth = 0;
    int max = 0;
    char quote = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (quote != 0) {
        if (c == quote) {
          quote = 0; // a doubled quote closes and reopens: same count
        }
      } else if (c == '\'' || c == '"' || c == '`') {
        quote = c;
      } else if (c == '(' || c == '[' || c == '{') {
        max = Math.max(max, ++depth);
      } else if (c == ')' || c == ']' || c == '}') {
        depth = Math.max(0, depth - 1);
      }
    }
    return max;
  }

  /** Max bracket nesting as JSqlParser's lexer tokenizes the text; null when it cannot. */
  private static Integer lexerDepth(String text) {
    try {
      CCJSqlParserTokenManager tm =
          new CCJSqlParserTokenManager(new SimpleCharStream(new StringProvider(text)));
      int depth = 0;
      int max = 0;
      for (int i = 0; i < 10_000; i++) {
        Token t = tm.getNextToken();
        if (t.kind == 0) {
          return max;
        }
        if (t.specialToken != null) {
          throw new AssertionError("a comment reached the parser: " + t.specialToken.image);
        }
        if (t.image.equals("(") || t.image.equals("[") || t.image.equals("{")) {
          max = Math.max(max, ++depth);
        } else if (t.image.equals(")") || t.image.equals("]") || t.image.equals("}")) {
          depth = Math.max(0, depth - 1);
        }
      }
      return null;
    } catch (RuntimeException | Error e) {
      if (e instanceof AssertionError a) {
        throw a;
      }
      return null;
    }
  }
}
