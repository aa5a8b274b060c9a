package io.transit.flight.diagnostic;

import java.nio.charset.StandardCharsets;

/**
 * Bounds the text a failure puts in {@code grpc-message}: printable ASCII only, at most
 * {@link #MAX_BYTES} bytes, truncation made explicit.
 *
 * <p>Every code point outside 0x20–0x7E is written as its UTF-8 bytes, each as {@code \xNN}
 * (uppercase hex); a lone surrogate counts as U+FFFD. A backslash is written {@code \\} so an
 * escape in the output is never ambiguous. When the escaped text is longer than the bound, it is
 * cut at an escape boundary and {@link #TRUNCATION_MARKER} appended, the whole still within
 * {@link #MAX_BYTES}.
 *
 * <p>On the wire, grpc-java's status-message marshaller percent-encodes {@code %}, {@code ~} and
 * bytes outside 0x20–0x7D and decodes them on receipt, so a {@code %} here arrives intact; the
 * bound applies to the decoded bytes (the encoded header may be up to three times longer).
 *
 * <p>Stateless; any thread.
 */
public final class GrpcMessage {
  /** Upper bound of a bounded message, in (decoded) bytes. */
  public static final int MAX_BYTES = 128;

  /** Appended to a message that was cut. */
  public static final String TRUNCATION_MARKER = "...[truncated]";

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private GrpcMessage() {}

  /** The bounded form of {@code code + ": " + message}; a null message counts as empty. */
  public static String of(String code, String message) {
    return bound(code + ": " + (message == null ? "" : message));
  }

  /** The bounded form of {@code text}: printable ASCII, at most {@link #MAX_BYTES} bytes. */
  public static String bound(String text) {
    StringBuilder out = new StringBuilder(Math.min(text.length(), MAX_BYTES) + 16);
    // Length of out at the last escape boundary that still leaves room for the marker.
    int keepForMarker = 0;
    int limitBeforeMarker = MAX_BYTES - TRUNCATION_MARKER.length();
    for (int i = 0; i < text.length(); ) {
      int cp = text.codePointAt(i);
      i += Character.charCount(cp);
      appendEscaped(out, cp);
      if (out.length() <= limitBeforeMarker) {
        keepForMarker = out.length();
      }
      if (out.length() > MAX_BYTES) {
        out.setLength(keepForMarker);
        return out.append(TRUNCATION_MARKER).toString();
      }
    }
    return out.toString();
  }

  private static void appendEscaped(StringBuilder out, int cp) {
    if (cp == '\\') {
      out.append("\\\\");
    } else if (cp >= 0x20 && cp <= 0x7E) {
      out.append((char) cp);
    } else {
      if (Character.isSurrogate((char) cp) && cp <= 0xFFFF) {
        cp = 0xFFFD;
      }
      for (byte b : new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8)) {
        out.append("\\x").append(HEX[(b >> 4) & 0xF]).append(HEX[b & 0xF]);
      }
    }
  }
}
