package io.transit.flight.diagnostic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Generated diagnostics (seeded) with up to 100 KB of raw text: the encoding is always valid
 * UTF-8 JSON within 4096 bytes, exact fields are unchanged and every shortening is marked.
 */
class DiagnosticPropertyTest {
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
  private static final String MARKER = GrpcMessage.TRUNCATION_MARKER;
  private static final String[] CODES = {
    "query.namespace_conflict", "query.sequence_gap", "admission.busy", "ticket.expired",
    "flight.integer_out_of_range", "query.budget_exhausted", "a.b", "x" + ".y".repeat(31)
  };

  @Test
  void generatedDiagnosticsStayBoundedExactAndExplicit() throws Exception {
    Random random = new Random(0x7A11_5EEDL);
    int truncated = 0;
    int omitted = 0;
    int unavailable = 0;
    for (int i = 0; i < 600; i++) {
      Diagnostic d = generate(random, i);
      byte[] bytes = d.toJson();
      Check check = verify(d, bytes);
      truncated += check.truncated ? 1 : 0;
      omitted += check.omitted ? 1 : 0;
      unavailable += check.unavailable ? 1 : 0;
    }
    // The generator must exercise every shortening step, not only the happy path.
    assertTrue(truncated > 100, "truncated cases: " + truncated);
    assertTrue(unavailable > 10, "unavailable cases: " + unavailable);
    assertTrue(omitted > 5, "omitted cases: " + omitted);
  }

  private record Check(boolean truncated, boolean unavailable, boolean omitted) {}

  static Check verify(Diagnostic d, byte[] bytes) throws Exception {
    assertTrue(bytes.length <= Diagnostic.MAX_BYTES, "size " + bytes.length);
    strictUtf8(bytes);
    JsonNode root = JSON.readTree(bytes);
    assertEquals(Diagnostic.CONTRACT, root.get("contract").asText());
    assertEquals(d.code(), root.get("code").asText());
    assertEquals(d.cause().code().name(), root.get("status").asText());
    assertEquals(d.cause().name(), root.get("cause").asText());
    assertEquals(d.outcome().wireName(), root.get("outcome").asText());
    if (d.stage() == null) {
      assertFalse(root.has("stage"));
    } else {
      assertEquals(d.stage().wireName(), root.get("stage").asText());
    }
    JsonNode id = root.get("identity");
    assertUnsigned(d.identity().namespace(), id.get("namespace"));
    assertUnsigned(d.identity().correlation(), id.get("correlation"));
    assertUnsigned(d.identity().firstSequence(), id.get("first_sequence"));
    assertUnsigned(d.identity().nativeSequence(), id.get("native_sequence"));
    List<String> actions = new ArrayList<>();
    root.get("actions").forEach(a -> actions.add(a.asText()));
    assertEquals(d.actions().stream().map(Action::wireName).toList(), actions);

    boolean anyShortened = assertShortened(d.message(), root.get("message").asText(),
        root.path("message_truncated").asBoolean(false));
    boolean anyUnavailable = false;
    JsonNode facts = root.get("facts");
    int omitted = root.path("facts_omitted").asInt(0);
    assertEquals(d.facts().size(), facts.size() + omitted);
    anyShortened |= omitted > 0;
    for (int i = 0; i < facts.size(); i++) {
      Fact f = d.facts().get(i);
      JsonNode n = facts.get(i);
      assertEquals(f.name(), n.get("name").asText());
      assertEquals(f.kind().wireName(), n.get("kind").asText());
      if (!f.kind().shortenable()) {
        assertEquals(f.value(), n.get("value").asText(), "numbers and digests stay exact");
      } else if (n.path("unavailable").asBoolean(false)) {
        assertFalse(n.has("value"));
        anyUnavailable = true;
      } else {
        anyShortened |= assertShortened(f.value(), n.get("value").asText(),
            n.path("truncated").asBoolean(false));
      }
      Location l = f.location();
      JsonNode ln = n.get("location");
      assertEquals(l == null, ln == null);
      if (l != null) {
        assertInt(l.line(), ln.get("line"));
        assertInt(l.column(), ln.get("column"));
        assertInt(l.offset(), ln.get("offset"));
        assertInt(l.length(), ln.get("length"));
        if (l.path() == null) {
          assertFalse(ln.has("path") || ln.has("path_unavailable"));
        } else if (ln.path("path_unavailable").asBoolean(false)) {
          assertFalse(ln.has("path"));
          anyUnavailable = true;
        } else {
          anyShortened |= assertShortened(l.path(), ln.get("path").asText(),
              ln.path("path_truncated").asBoolean(false));
        }
      }
    }
    boolean flagged = root.get("truncated").asBoolean();
    assertEquals(anyShortened || anyUnavailable, flagged, "top-level truncated flag");
    if (flagged) {
      // Shortening happens only when the full form really is over the bound.
      assertTrue(DiagnosticEncoder.encode(d, Integer.MAX_VALUE).length > Diagnostic.MAX_BYTES);
    }
    return new Check(flagged, anyUnavailable, omitted > 0);
  }

  /** Checks a possibly shortened string; returns whether it was shortened. */
  private static boolean assertShortened(String original, String written, boolean marked) {
    if (!marked) {
      assertEquals(original, written);
      return false;
    }
    assertTrue(written.endsWith(MARKER), "shortened text ends with the marker");
    String kept = written.substring(0, written.length() - MARKER.length());
    assertTrue(original.startsWith(kept), "shortened text is a prefix of the original");
    assertTrue(kept.length() < original.length());
    return true;
  }

  private static void assertUnsigned(Long expected, JsonNode node) {
    if (expected == null) {
      assertTrue(node == null);
    } else {
      assertNotNull(node);
      assertTrue(node.isTextual(), "u64 values are decimal strings");
      assertEquals(Long.toUnsignedString(expected), node.asText());
    }
  }

  private static void assertInt(Integer expected, JsonNode node) {
    if (expected == null) {
      assertTrue(node == null);
    } else {
      assertEquals(expected.intValue(), node.intValue());
    }
  }

  static void strictUtf8(byte[] bytes) throws CharacterCodingException {
    StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT)
        .decode(ByteBuffer.wrap(bytes));
  }

  // ---- generator -------------------------------------------------------------------------

  static Diagnostic generate(Random r, int index) {
    // Raw text for this case, up to 100 KB in all: the message and each fact take a share.
    int budget = 1 + r.nextInt(100 * 1024);
    boolean bigText = r.nextInt(3) == 0;
    String message = text(r, bigText ? r.nextInt(budget / 2 + 1) : r.nextInt(200));
    int factCount = switch (r.nextInt(6)) {
      case 0 -> 0;
      case 1 -> 300 + r.nextInt(2000); // pathological: many numeric facts
      default -> r.nextInt(40);
    };
    boolean numericFlood = factCount >= 300;
    List<Fact> facts = new ArrayList<>();
    for (int i = 0; i < factCount; i++) {
      String name = "f" + i + (r.nextBoolean() ? "" : ".x_" + r.nextInt(1000));
      int kind = numericFlood ? r.nextInt(2) : r.nextInt(6);
      Fact f = switch (kind) {
        case 0 -> Fact.unsigned(name, r.nextLong());
        case 1 -> Fact.signed(name, r.nextLong());
        case 2 -> {
          byte[] digest = new byte[1 + r.nextInt(64)];
          r.nextBytes(digest);
          yield Fact.digest(name, digest);
        }
        case 3 -> Fact.path(name, text(r, bigText ? r.nextInt(Math.max(1, budget / 120)) : r.nextInt(60)));
        default -> Fact.text(name, text(r, bigText ? r.nextInt(Math.max(1, budget / 120)) : r.nextInt(120)));
      };
      if (r.nextInt(3) == 0) {
        String path = r.nextBoolean() ? null : text(r, bigText ? r.nextInt(Math.max(1, budget / 240)) : 20);
        f = f.at(new Location(path, r.nextInt(1000), r.nextInt(1000), r.nextInt(Integer.MAX_VALUE),
            r.nextBoolean() ? null : r.nextInt(100)));
      }
      facts.add(f);
    }
    Cause cause = Cause.values()[r.nextInt(Cause.values().length)];
    Identity identity = new Identity(
        r.nextBoolean() ? r.nextLong() : null, r.nextBoolean() ? -1L : null,
        r.nextBoolean() ? r.nextLong() : null, r.nextBoolean() ? Long.MIN_VALUE : null);
    List<Action> actions = new ArrayList<>(Recovery.actions(cause));
    for (int i = r.nextInt(12); i > 0; i--) {
      actions.add(Action.values()[r.nextInt(Action.values().length)]);
    }
    Stage stage = r.nextBoolean() ? null : Stage.values()[r.nextInt(Stage.values().length)];
    Outcome outcome = Outcome.values()[r.nextInt(Outcome.values().length)];
    return new Diagnostic(CODES[index % CODES.length], cause, message, outcome, stage, identity,
        facts, actions);
  }

  /** Text of about {@code n} chars mixing ASCII, JSON specials, controls, CJK, emoji, lone surrogates. */
  static String text(Random r, int n) {
    StringBuilder sb = new StringBuilder(n);
    while (sb.length() < n) {
      switch (r.nextInt(10)) {
        case 0 -> sb.append((char) r.nextInt(0x20));
        case 1 -> sb.append("\"\\/");
        case 2 -> sb.append((char) (0x4E00 + r.nextInt(0x5000)));
        case 3 -> sb.appendCodePoint(0x1F300 + r.nextInt(0x300));
        case 4 -> sb.append(r.nextBoolean() ? '\uD83D' : '\uDC00');
        case 5 -> sb.append((char) (0x80 + r.nextInt(0x700)));
        default -> sb.append((char) (0x20 + r.nextInt(0x5F)));
      }
    }
    return sb.toString();
  }
}
