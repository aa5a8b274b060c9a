package io.transit.flight.diagnostic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

class GrpcMessageTest {
  private static void assertPrintableAndBounded(String s) {
    byte[] bytes = s.getBytes(StandardCharsets.US_ASCII);
    assertTrue(bytes.length <= GrpcMessage.MAX_BYTES, () -> "too long: " + bytes.length);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      assertTrue(c >= 0x20 && c <= 0x7E, "not printable ASCII at " + i + ": " + (int) c);
    }
  }

  @Test
  void printableAsciiPassesUnchanged() {
    String text = "query.sequence_gap: expected 18446744073709551615, got 5 (100% ~ok)";
    assertEquals(text, GrpcMessage.bound(text));
  }

  @Test
  void nonAsciiIsEscapedAsUtf8Bytes() {
    assertEquals("caf\\xC3\\xA9 \\xF0\\x9F\\x98\\x80", GrpcMessage.bound("café 😀"));
  }

  @Test
  void controlCharactersAndDeleteAreEscaped() {
    assertEquals("a\\x0Ab\\x00c\\x09d\\x7F", GrpcMessage.bound("a\nb\u0000c\td\u007F"));
  }

  @Test
  void backslashIsEscapedSoEscapesAreUnambiguous() {
    assertEquals("\\\\x41", GrpcMessage.bound("\\x41"));
  }

  @Test
  void loneSurrogateBecomesReplacementCharacter() {
    assertEquals("x\\xEF\\xBF\\xBDy", GrpcMessage.bound("x\uD800y"));
  }

  @Test
  void exactly128BytesIsKept() {
    String text = "a".repeat(128);
    assertEquals(text, GrpcMessage.bound(text));
  }

  @Test
  void oneByteOverTheBoundIsTruncatedWithMarker() {
    String out = GrpcMessage.bound("b".repeat(129));
    assertEquals(128, out.length());
    assertEquals("b".repeat(128 - GrpcMessage.TRUNCATION_MARKER.length()) + GrpcMessage.TRUNCATION_MARKER, out);
  }

  @Test
  void truncationNeverSplitsAnEscape() {
    // 113 ASCII bytes leave room for 1 more char before the marker; an escape (4 chars) does not fit.
    String out = GrpcMessage.bound("c".repeat(113) + "é".repeat(20));
    assertEquals("c".repeat(113) + GrpcMessage.TRUNCATION_MARKER, out);
    assertPrintableAndBounded(out);
  }

  @Test
  void codeAndMessageAreJoined() {
    assertEquals("query.retired: released", GrpcMessage.of("query.retired", "released"));
    assertEquals("query.retired: ", GrpcMessage.of("query.retired", null));
  }

  @Test
  void randomInputIsAlwaysBoundedPrintableAsciiAndDecodesToAPrefix() {
    Random random = new Random(20240611L);
    int truncatedCount = 0;
    for (int i = 0; i < 2000; i++) {
      StringBuilder sb = new StringBuilder();
      int n = random.nextInt(200);
      for (int j = 0; j < n; j++) {
        sb.append((char) random.nextInt(random.nextBoolean() ? 0x80 : 0x10000));
      }
      String input = Utf8Text.wellFormed(sb.toString());
      String out = GrpcMessage.bound(sb.toString());
      assertPrintableAndBounded(out);
      boolean truncated = out.endsWith(GrpcMessage.TRUNCATION_MARKER)
          && !input.endsWith(GrpcMessage.TRUNCATION_MARKER);
      String body = truncated
          ? out.substring(0, out.length() - GrpcMessage.TRUNCATION_MARKER.length()) : out;
      String decoded = unescape(body);
      if (truncated) {
        truncatedCount++;
        assertTrue(input.startsWith(decoded), "decoded text is not a prefix of the input");
      } else {
        assertEquals(input, decoded);
      }
    }
    assertTrue(truncatedCount > 100, "the generator should produce many long inputs");
  }

  /** Inverse of the escaping, written independently as an oracle. */
  private static String unescape(String s) {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\' && s.charAt(i + 1) == '\\') {
        bytes.write('\\');
        i++;
      } else if (c == '\\') {
        assertEquals('x', s.charAt(i + 1));
        bytes.write(Integer.parseInt(s.substring(i + 2, i + 4), 16));
        i += 3;
      } else {
        bytes.write(c);
      }
    }
    return new String(bytes.toByteArray(), StandardCharsets.UTF_8);
  }
}
