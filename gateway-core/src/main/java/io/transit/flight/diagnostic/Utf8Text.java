package io.transit.flight.diagnostic;

/** UTF-8 length and cutting for diagnostic text. Stateless; any thread. */
final class Utf8Text {
  private Utf8Text() {}

  /** {@code s} with every lone surrogate replaced by U+FFFD, so it always encodes as UTF-8. */
  static String wellFormed(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isSurrogate(c)) {
        return replaceLoneSurrogates(s);
      }
    }
    return s;
  }

  private static String replaceLoneSurrogates(String s) {
    StringBuilder out = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        out.append(c).append(s.charAt(++i));
      } else {
        out.append(Character.isSurrogate(c) ? '\uFFFD' : c);
      }
    }
    return out.toString();
  }

  /** Bytes of {@code s} in UTF-8 ({@code s} must be well formed). */
  static int length(String s) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n += 1;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c)) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }

  /** Whether {@code s} takes more than {@code maxBytes} UTF-8 bytes; reads at most that far. */
  static boolean exceeds(String s, int maxBytes) {
    if (s.length() > maxBytes) {
      return true; // every char takes at least one byte
    }
    return length(s) > maxBytes;
  }

  /**
   * The longest prefix of {@code s} of at most {@code maxBytes} UTF-8 bytes that ends on a code
   * point boundary.
   */
  static String prefix(String s, int maxBytes) {
    int n = 0;
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i);
      int w = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
      if (n + w > maxBytes) {
        return s.substring(0, i);
      }
      n += w;
      i += Character.charCount(cp);
    }
    return s;
  }
}
