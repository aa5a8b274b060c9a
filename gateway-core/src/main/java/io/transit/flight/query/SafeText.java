package io.transit.flight.query;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;

/**
 * Builds the short, printable-ASCII messages compilation and adaptation failures carry. Caller
 * text (identifiers, literals) enters a message only through {@link #ident} (or the package's
 * {@code fragment}), which escapes it and truncates it visibly, and a fact only through {@link
 * #fact}; so no message can carry the full SQL or exceed the profile's 128-byte grpc-message
 * bound.
 *
 * <p>Truncation is explicit in the Diagnostic v1 envelope too: a fact cut here is a {@link
 * Fact#cut()} fact ({@code "truncated":true}), and a failure built here ({@link #invalid}, {@link
 * #unsupported}, {@link #failure}) whose message was cut, or quotes caller text that was cut, is
 * flagged {@link GatewayException#withMessageCut()} ({@code message_truncated}). To know that, a
 * cut fragment ends with {@link #CUT}, a control character escaped caller text can never hold;
 * the message builders remove it, so it never leaves this class. Stateless; any thread.
 */
public final class SafeText {
  /** The profile's bound on a decoded grpc-message. */
  static final int MAX_MESSAGE = 128;
  /** The bound on one quoted piece of caller text inside a message. */
  static final int MAX_FRAGMENT = 32;

  private static final String ELLIPSIS = "...";
  /**
   * Ends a cut fragment until a message builder removes it. Caller text never holds it raw:
   * escaping turns every control character into {@code \xNN}.
   */
  private static final char CUT = '\u001e';

  private SafeText() {}

  /**
   * Caller text made safe for a message: printable ASCII kept (backslash doubled), everything
   * else as {@code \xNN} or a backslash-u escape; longer than {@link #MAX_FRAGMENT} characters after
   * escaping ends in {@code ...} (and the internal cut mark). Escapes are never cut in half. Only
   * for messages built here; a fact takes {@link #fact}.
   */
  static String fragment(String text) {
    Escaped e = escape(text, MAX_FRAGMENT, true);
    return e.cut ? e.text + CUT : e.text;
  }

  /** An identifier as it appears in messages: escaped, truncated, in double quotes. */
  public static String ident(String identifier) {
    return '"' + fragment(identifier) + '"';
  }

  /**
   * A text fact holding caller text as a message quotes it (escaped, at most {@link
   * #MAX_FRAGMENT} characters); flagged cut when it was shortened.
   */
  public static Fact fact(String name, String callerText) {
    String f = fragment(callerText);
    return isCut(f) ? Fact.cutText(name, strip(f)) : Fact.text(name, f);
  }

  /**
   * A whole message bounded to {@link #MAX_MESSAGE} printable ASCII characters. Its caller parts
   * are fragments already, so backslashes here are escapes and are not doubled again.
   */
  public static String message(String text) {
    return escape(strip(text), MAX_MESSAGE, false).text;
  }

  /**
   * {@code code}'s failure with {@code what} as its bounded message, flagged cut when the
   * message was bounded or quotes cut caller text.
   */
  public static GatewayException failure(QueryCode code, String what) {
    return flagged(code.failure(message(what)), what);
  }

  /** As {@link #failure(QueryCode, String)}, caused by {@code underlying}. */
  public static GatewayException failure(QueryCode code, String what, Throwable underlying) {
    return flagged(code.failure(message(what), underlying), what);
  }

  static GatewayException unsupported(String what) {
    return failure(QueryCode.UNSUPPORTED, what);
  }

  static GatewayException invalid(String code, String what) {
    return flagged(GatewayException.of(Cause.INVALID_REQUEST, code, message(what)), what);
  }

  private static GatewayException flagged(GatewayException e, String what) {
    return isCut(what) || escape(strip(what), MAX_MESSAGE, false).cut ? e.withMessageCut() : e;
  }

  private static boolean isCut(String text) {
    return text.indexOf(CUT) >= 0;
  }

  private static String strip(String text) {
    return isCut(text) ? text.replace(String.valueOf(CUT), "") : text;
  }

  /** Escaped text and whether it had to be cut to its bound. */
  private record Escaped(String text, boolean cut) {}

  private static Escaped escape(String text, int max, boolean doubleBackslash) {
    StringBuilder full = new StringBuilder(text.length() + 8);
    // Remember where each piece ends so a cut never splits an escape sequence.
    int fitsWithEllipsis = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      full.append(c == '\\' && !doubleBackslash ? "\\" : piece(c));
      if (full.length() <= max - ELLIPSIS.length()) {
        fitsWithEllipsis = full.length();
      }
      if (full.length() > max) {
        break;
      }
    }
    if (full.length() <= max) {
      return new Escaped(full.toString(), false);
    }
    // Explicit truncation: the reader sees that text was cut, the envelope flags it.
    return new Escaped(full.substring(0, fitsWithEllipsis) + ELLIPSIS, true);
  }

  private static String piece(char c) {
    if (c == '\\') {
      return "\\\\";
    }
    if (c >= 0x20 && c < 0x7f) {
      return String.valueOf(c);
    }
    return c < 0x100 ? String.format("\\x%02x", (int) c) : String.format("\\u%04x", (int) c);
  }
}
