package io.transit.flight.query;

import io.transit.flight.diagnostic.Budget;
import io.transit.flight.diagnostic.GatewayException;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The lexical pre-check every statement passes before JSqlParser sees it. One linear pass over
 * the text splits it into the tokens JSqlParser 5.3's lexer forms — {@code --} and {@code //}
 * line comments, non-nesting {@code /* *\/} block comments, {@code '...'} strings (a quote
 * doubled inside; a backslash is an ordinary character), {@code "..."} identifiers (a quote
 * doubled inside) and {@code `...`} identifiers — and refuses, in microseconds, text longer,
 * with more tokens, more brackets or deeper nesting than the bounds below, whatever its comments
 * hide: the parser's time grows steeply with nesting (roughly depth cubed) and bracket count. It
 * also refuses, as outside the profile, the words that open the parser's exponential shapes:
 * {@code CASE}, and a second {@code SELECT} (a subquery, a set operation, a second statement).
 * Within the bounds those took seconds to minutes to parse in a hundred characters, and a parse
 * abandoned at {@code compile_timeout_ms} stopped only at the parser's next check, up to 8× later
 * (2026-12-07).
 *
 * <p>Lexical forms whose extent this pass cannot be sure to judge as the parser does (string
 * prefixes other than {@code N}, such as Oracle's {@code q'[...]'}, and {@code $}-quoting) are
 * refused here; none is in the profile. The parser then sees the text with every comment blanked
 * (line breaks kept, so syntax-error positions still point into the caller's text), so no comment
 * can be read differently by the two, and with every backslash inside a string literal replaced
 * by {@link #BACKSLASH}: JSqlParser ends a string token after a backslash and a quote even
 * with backslash escapes off, so {@code 'it\''s'} would reach it as two strings. {@link
 * #restore} gives a literal's text back.
 *
 * <p>Stateless; any thread.
 */
final class SqlGuard {
  /** Longest statement, in UTF-16 characters (the 16 KiB message bound already implies it). */
  static final int MAX_CHARS = 16_384;
  /** Most tokens (comments and whitespace excluded). */
  static final int MAX_TOKENS = 4_096;
  /** Deepest nesting of {@code ( [ {}. */
  static final int MAX_NESTING = 32;
  /** Most opening brackets in the whole statement: each is a parser lookahead. */
  static final int MAX_BRACKETS = 256;

  static final String CODE = "query.too_complex";

  /**
   * What the parser sees for a backslash inside a string literal: an unpaired surrogate, which
   * no SQL text from a client holds (it arrives as UTF-8, which cannot encode one).
   */
  static final char BACKSLASH = '\uDC5C';

  /**
   * Words JSqlParser 5.3 reads together with a quote that follows (case-insensitive): its string
   * prefixes, "" for Oracle's bare q form, and X of a hex literal.
   */
  private static final Set<String> PREFIXES =
      Set.of("", "U", "E", "N", "R", "B", "RB", "_UTF8", "X");
  /** A word the parser reads whole as one keyword or identifier. */
  private static final Pattern WHOLE_WORD = Pattern.compile("[A-Z][A-Z0-9_]*");

  private SqlGuard() {}

  /**
   * Checks {@code sql} and returns the text to parse (comments blanked). Throws {@code
   * query.too_complex} (a bound, with facts {@code bound}, {@code limit}, {@code required}),
   * {@code query.syntax} (unterminated literal or comment) or {@code query.unsupported} (a
   * lexical form outside the profile).
   */
  static String check(String sql) {
    int n = sql.length();
    if (n > MAX_CHARS) {
      throw tooComplex("characters", MAX_CHARS, n);
    }
    if (sql.indexOf(BACKSLASH) >= 0) {
      throw SafeText.invalid("query.syntax", "syntax error: text with an unpaired surrogate");
    }
    char[] out = sql.toCharArray();
    int tokens = 0;
    int depth = 0;
    int maxDepth = 0;
    int brackets = 0;
    boolean afterNot = false; // the previous token was the word NOT
    int selects = 0;
    boolean setOperation = false; // UNION, INTERSECT or EXCEPT seen
    int i = 0;
    while (i < n) {
      char c = sql.charAt(i);
      if (Character.isWhitespace(c)) {
        i++;
        continue;
      }
      if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
        i = blank(out, i, lineEnd(sql, i));
        continue;
      }
      if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '/') {
        // JSqlParser reads a line comment here, DuckDB an integer division: `fare // 100` would
        // compile as `fare` where DuckDB divides. Neither reading is taken.
        throw SafeText.unsupported("unsupported: // outside quoted text");
      }
      if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '*') {
        int close = sql.indexOf("*/", i + 2);
        if (close < 0) {
          throw SafeText.invalid("query.syntax", "syntax error: unterminated comment");
        }
        if (sql.indexOf("/*", i + 2) >= 0 && sql.indexOf("/*", i + 2) < close) {
          // DuckDB nests block comments, JSqlParser does not: the first */ would end one
          // comment for the parser and only the inner one for DuckDB.
          throw SafeText.unsupported("unsupported: a block comment inside a block comment");
        }
        i = blank(out, i, close + 2);
        continue;
      }
      tokens++;
      boolean not = false;
      if (c == '\'') {
        requireNoPrefix(sql, i);
        int end = quotedEnd(sql, i, '\'', true, "string literal");
        for (int k = i + 1; k < end - 1; k++) {
          if (out[k] == '\\') {
            out[k] = BACKSLASH;
          }
        }
        i = end;
      } else if (c == '"') {
        i = quotedEnd(sql, i, '"', true, "quoted identifier");
      } else if (c == '`') {
        i = quotedEnd(sql, i, '`', false, "quoted identifier");
      } else if (c == '$') {
        throw SafeText.unsupported("unsupported: $ outside quoted text");
      } else if (isWordChar(c)) {
        int start = i;
        while (i < n && isWordChar(sql.charAt(i))) {
          i++;
        }
        not = i - start == 3 && sql.regionMatches(true, start, "NOT", 0, 3);
        if (word(sql, start, i, "CASE")) {
          // Outside the profile, and the parser's slowest shape: ~100 characters of nested CASE
          // or parentheses after one keep it busy for seconds, past any abandonment in time.
          throw SafeText.unsupported("unsupported: CASE");
        }
        setOperation |= word(sql, start, i, "UNION") || word(sql, start, i, "INTERSECT")
            || word(sql, start, i, "EXCEPT");
        if (word(sql, start, i, "SELECT") && ++selects > 1) {
          // A subquery, a set operation or a second statement: each outside the profile, and
          // nested subqueries parse in exponential time (a dozen levels: seconds to minutes).
          throw SafeText.unsupported(setOperation ? "unsupported: UNION, INTERSECT or EXCEPT"
              : "unsupported: a subquery or a second SELECT");
        }
        if (not && afterNot) {
          // DuckDB reads NOT NOT p as NOT (NOT p); the parser refuses it, or reads the first NOT
          // as applying to the column. One reading for every form: refused, with the spelling
          // that works.
          throw SafeText.unsupported("unsupported: NOT NOT (write NOT (NOT ...))");
        }
      } else {
        if (c == '(' || c == '[' || c == '{') {
          brackets++;
          maxDepth = Math.max(maxDepth, ++depth);
        } else if (c == ')' || c == ']' || c == '}') {
          depth = Math.max(0, depth - 1);
        }
        i++;
      }
      afterNot = not;
    }
    // Reported after the whole pass so that the facts carry the exact figure.
    if (tokens > MAX_TOKENS) {
      throw tooComplex("tokens", MAX_TOKENS, tokens);
    }
    if (maxDepth > MAX_NESTING) {
      throw tooComplex("nesting", MAX_NESTING, maxDepth);
    }
    if (brackets > MAX_BRACKETS) {
      throw tooComplex("brackets", MAX_BRACKETS, brackets);
    }
    return new String(out);
  }

  /** True when {@code sql[start, end)} is the word {@code upper}, in any case. */
  private static boolean word(String sql, int start, int end, String upper) {
    return end - start == upper.length() && sql.regionMatches(true, start, upper, 0, end - start);
  }

  /** Index of the line break ending a line comment (or the end of the text). */
  private static int lineEnd(String sql, int from) {
    int i = from;
    while (i < sql.length() && sql.charAt(i) != '\n' && sql.charAt(i) != '\r') {
      i++;
    }
    return i;
  }

  /** Blanks {@code [from, to)} except line breaks; returns {@code to}. */
  private static int blank(char[] out, int from, int to) {
    for (int i = from; i < to; i++) {
      if (out[i] != '\n' && out[i] != '\r') {
        out[i] = ' ';
      }
    }
    return to;
  }

  /** The index after the closing quote of the literal opening at {@code open}. */
  private static int quotedEnd(String sql, int open, char quote, boolean doubling, String what) {
    int i = open + 1;
    while (i < sql.length()) {
      if (sql.charAt(i) == quote) {
        if (doubling && i + 1 < sql.length() && sql.charAt(i + 1) == quote) {
          i += 2;
          continue;
        }
        return i + 1;
      }
      i++;
    }
    throw SafeText.invalid("query.syntax", "syntax error: unterminated " + what);
  }

  /** {@code text} (a literal as the parser gave it) with its backslashes back. */
  static String restore(String text) {
    return text.indexOf(BACKSLASH) < 0 ? text : text.replace(BACKSLASH, '\\');
  }

  /**
   * The parser reads a word glued to a quote as a string prefix when the word is one of its
   * prefixes (U, E, R, B, RB, _utf8, an Oracle q form) or X (a hex literal): only N is ours. Any
   * other word that it reads whole as a keyword or identifier (an ASCII letter, then ASCII
   * letters, digits or underscores), such as {@code DATE'2024-01-01'} or {@code OR's'}, ends
   * before the quote. Anything else glued to a quote is refused: its token boundary is the
   * parser's to decide.
   */
  private static void requireNoPrefix(String sql, int quote) {
    int start = quote;
    while (start > 0 && isWordChar(sql.charAt(start - 1))) {
      start--;
    }
    if (start == quote) {
      return;
    }
    String word = sql.substring(start, quote).toUpperCase(Locale.ROOT);
    if (word.equals("N")) {
      return;
    }
    if (!WHOLE_WORD.matcher(word).matches() || PREFIXES.contains(word)
        || (word.endsWith("Q") && PREFIXES.contains(word.substring(0, word.length() - 1)))) {
      throw SafeText.unsupported("unsupported: string literal prefix");
    }
  }

  private static boolean isWordChar(char c) {
    return c == '_' || Character.isLetterOrDigit(c) || c >= 0x80;
  }

  private static GatewayException tooComplex(String bound, int limit, int required) {
    return SafeText.invalid(CODE, "statement exceeds the " + bound + " bound of " + limit)
        .with("bound", bound).with("limit", limit).with("required", required)
        .withBudget(new Budget(bound, limit, (long) required));
  }
}
