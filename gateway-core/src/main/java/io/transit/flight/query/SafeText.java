package io.transit.flight.query;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;

/**
 * Builds the short, printable-ASCII messages compilation and adaptation failures carry. Caller
 * text (identifiers, literals) enters a message only through {@link #fragment}, which escapes it
 * and truncates it visibly, so no message can carry the full SQL or exceed the profile's 128-byte
 * grpc-message bound. Stateless; any thread.
 */
public final class SafeText {
  /** The profile's bound on a decoded grpc-message. */
  static final int MAX_MESSAGE = 128;
  /** The bound on one quoted piece of caller text inside a message. */
  static final int MAX_FRAGMENT = 32;

  private static final String ELLIPSIS = "...";

  private SafeText() {}

  /**
   * Caller text made safe for a message: printable ASCII kept (backslash doubled), everything
   * else as {@code \xNN} or a backslash-u escape; longer than {@link #MAX_FRAGMENT} characters after
   * escaping ends in {@code ...}. Escapes are never cut in half.
   */
  public static String fragment(String text) {
    return escape(text, MAX_FRAGMENT, true);
  }

  /** An identifier as it appears in messages: escaped, truncated, in double quotes. */
  public static String ident(String identifier) {
    return '"' + fragment(identifier) + '"';
  }

  /**
   * A whole message bounded to {@link #MAX_MESSAGE} printable ASCII characters. Its caller parts
   * are fragments already, so backslashes here are escapes and are not doubled again.
   */
  public static String message(String text) {
    return escape(text, MAX_MESSAGE, false);
  }

  static GatewayException unsupported(String what) {
    return QueryCode.UNSUPPORTED.failure(message(what));
  }

  static GatewayException invalid(String code, String what) {
    return GatewayException.of(Cause.INVALID_REQUEST, code, message(what));
  }

  private static String escape(String text, int max, boolean doubleBackslash) {
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
      return full.toString();
    }
    // Explicit truncation: the reader must see that text was cut.
    return full.substring(0, fitsWithEllipsis) + ELLIPSIS;
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
