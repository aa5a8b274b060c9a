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
 * Generated diagnostics (seeded, {@link DiagnosticSamples}) with up to 100 KB of raw UTF-8 text:
 * the encoding is always valid UTF-8 JSON (strict decoder, no duplicate keys) within 4096 bytes;
 * code, status, cause, outcome, stage, identity, number and digest facts, location coordinates
 * and actions are unchanged; every shortened string ends with the marker and is flagged, every
 * dropped value is flagged unavailable, dropped facts are counted, and {@code truncated} is true
 * exactly when any of that happened (and only when the full form is over 4096 bytes).
 */
class DiagnosticPropertyTest {
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
  private static final String MARKER = GrpcMessage.TRUNCATION_MARKER;

  @Test
  void generatedDiagnosticsStayBoundedExactAndExplicit() throws Exception {
    Random random = new Random(0x7A11_5EEDL);
    int truncated = 0;
    int omitted = 0;
    int unavailable = 0;
    int largestRaw = 0;
    for (int i = 0; i < 600; i++) {
      Diagnostic d = DiagnosticSamples.generate(random, i);
      int raw = DiagnosticSamples.rawBytes(d);
      assertTrue(raw <= DiagnosticSamples.MAX_RAW_BYTES, "raw " + raw);
      largestRaw = Math.max(largestRaw, raw);
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
    // The full-size cases really carry (almost) 100 KB of raw text.
    assertTrue(largestRaw > 99 * 1024, "largest raw text: " + largestRaw);
  }

  @Test
  void everyCauseAtEveryShorteningStepStaysBoundedExactAndExplicit() throws Exception {
    boolean sawOmitted = false;
    for (Diagnostic d : DiagnosticSamples.perCause()) {
      sawOmitted |= verify(d, d.toJson()).omitted;
    }
    assertTrue(sawOmitted, "the per-cause samples reach step 3");
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

    assertShared(d, root);
    boolean anyShortened = assertShortened(d.message(), root.get("message").asText(),
        root.path("message_truncated").asBoolean(false), d.messageCut());
    boolean encoderShortened = root.get("message").asText().endsWith(MARKER)
        && !d.message().endsWith(MARKER);
    boolean anyUnavailable = false;
    JsonNode facts = root.get("facts");
    int omitted = root.path("facts_omitted").asInt(0);
    assertEquals(d.facts().size(), facts.size() + omitted);
    anyShortened |= omitted > 0;
    int textFacts = (int) d.facts().stream().filter(f -> f.kind().shortenable()).count();
    int textSeen = 0;
    int j = 0;
    for (Fact f : d.facts()) {
      if (f.kind().shortenable() && textSeen++ >= textFacts - omitted) {
        continue; // left out: only text/path facts, and only the last ones
      }
      JsonNode n = facts.get(j++);
      assertEquals(f.name(), n.get("name").asText());
      assertEquals(f.kind().wireName(), n.get("kind").asText());
      if (!f.kind().shortenable()) {
        assertEquals(f.value(), n.get("value").asText(), "numbers and digests stay exact");
        assertFalse(n.has("truncated") || n.has("unavailable"));
      } else if (n.path("unavailable").asBoolean(false)) {
        assertFalse(n.has("value"));
        anyUnavailable = true;
      } else {
        boolean marked = n.path("truncated").asBoolean(false);
        anyShortened |= assertShortened(f.value(), n.get("value").asText(), marked, f.cut());
        encoderShortened |= marked && n.get("value").asText().endsWith(MARKER)
            && !f.value().endsWith(MARKER);
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
          boolean cut = assertShortened(l.path(), ln.get("path").asText(),
              ln.path("path_truncated").asBoolean(false), false);
          anyShortened |= cut;
          encoderShortened |= cut;
        }
      }
    }
    assertEquals(facts.size(), j);
    boolean flagged = root.get("truncated").asBoolean();
    assertEquals(anyShortened || anyUnavailable, flagged, "top-level truncated flag");
    if (encoderShortened || anyUnavailable || omitted > 0) {
      // The encoder shortens only when the full form really is over the bound.
      assertTrue(DiagnosticEncoder.encode(d, Integer.MAX_VALUE).length > Diagnostic.MAX_BYTES);
    }
    return new Check(flagged, anyUnavailable, omitted > 0);
  }

  /** Witness, basis and budgets: written exactly as given, or absent when not given. */
  private static void assertShared(Diagnostic d, JsonNode root) {
    Witness w = d.witness();
    JsonNode wn = root.get("witness");
    assertEquals(w == null, wn == null);
    if (w != null) {
      assertEquals(w.source().wireName(), wn.get("source").asText());
      assertEquals(w.stage() == null ? null : w.stage().wireName(), text(wn.get("stage")));
      assertEquals(w.code(), text(wn.get("code")));
      assertUnsigned(w.nativeSequence(), wn.get("native_sequence"));
      assertUnsigned(w.correlation(), wn.get("correlation"));
      assertEquals(w.commandSha256(), text(wn.get("command_sha256")));
    }
    Basis b = d.basis();
    JsonNode bn = root.get("basis");
    assertEquals(b == null, bn == null);
    if (b != null) {
      assertEquals(b.declarationSha256(), bn.get("declaration_sha256").asText());
      assertEquals(b.engine(), bn.get("engine").asText());
      assertEquals(b.engineVersion(), bn.get("engine_version").asText());
    }
    JsonNode budgets = root.get("budgets");
    assertEquals(d.budgets().isEmpty(), budgets == null);
    for (int i = 0; i < d.budgets().size(); i++) {
      Budget expected = d.budgets().get(i);
      JsonNode n = budgets.get(i);
      assertEquals(expected.name(), n.get("name").asText());
      assertUnsigned(expected.limit(), n.get("limit"));
      assertUnsigned(expected.required(), n.get("required"));
    }
    if (budgets != null) {
      assertEquals(d.budgets().size(), budgets.size());
    }
  }

  private static String text(JsonNode n) {
    return n == null ? null : n.asText();
  }

  /**
   * Checks a possibly shortened string; returns whether it is flagged. Text cut before encoding
   * ({@code sourceCut}) is flagged even when the encoder wrote it whole.
   */
  private static boolean assertShortened(
      String original, String written, boolean marked, boolean sourceCut) {
    assertTrue(marked || !sourceCut, "text cut at its source is flagged");
    if (!marked) {
      assertEquals(original, written);
      return false;
    }
    if (sourceCut && written.equals(original)) {
      return true;
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
}
