package io.transit.flight.server.ops;

import java.nio.charset.StandardCharsets;

/**
 * A caller's text as a log field: method paths and the like that a peer chose, unauthenticated
 * included. Characters outside {@code [A-Za-z0-9._/-]} are written as {@code \xNN} (their UTF-8
 * bytes), so a path cannot end the line and forge another (the text layout does not escape), nor
 * add a {@code key=value} of its own; cut to a bound with {@code ...}. Stateless.
 */
public final class LoggedText {
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private LoggedText() {}

  /** {@code text} escaped as above, at most {@code max} characters before the {@code ...}. */
  public static String of(String text, int max) {
    if (text == null) {
      return "-";
    }
    StringBuilder out = new StringBuilder(Math.min(text.length(), max) + 3);
    for (int i = 0; i < text.length(); ) {
      int cp = text.codePointAt(i);
      i += Character.charCount(cp);
      int before = out.length();
      if (plain(cp)) {
        out.append((char) cp);
      } else {
        for (byte b : new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8)) {
          out.append("\\x").append(HEX[(b >> 4) & 0xF]).append(HEX[b & 0xF]);
        }
      }
      if (out.length() > max) {
        out.setLength(before);
        return out.append("...").toString();
      }
    }
    return out.toString();
  }

  private static boolean plain(int cp) {
    return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9')
        || cp == '.' || cp == '_' || cp == '/' || cp == '-';
  }
}
