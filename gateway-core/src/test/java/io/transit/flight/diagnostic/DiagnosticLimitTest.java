package io.transit.flight.diagnostic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The encoder at the 4096-byte limit (issue 15 item 5): with as many number facts as the bound
 * holds, every one of them, the identity, witness, basis, budgets and actions stay exact while
 * text facts are dropped and counted; one exact fact more is refused, and the status still goes
 * out. Text cut where it was made is flagged although the encoder cut nothing. Access-class
 * failures never carry the shared-contract terms (issue 15 item 6).
 */
class DiagnosticLimitTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Identity MAX_IDENTITY = new Identity(-1L, -1L, -1L, -1L);
  private static final Witness WITNESS = new Witness(Witness.Source.NATIVE_FAILURE,
      Stage.EXECUTION, "query.budget_exhausted", null, -2L, null);
  private static final Basis BASIS = Basis.of(new byte[32], "transit-embedded", "0.1.0-SNAPSHOT");
  private static final List<Budget> BUDGETS =
      List.of(new Budget("max_result_bytes", -1L, -1L), new Budget("nesting", 32, null));

  /** {@code numbers} u64 facts with the longest names, each followed by a 2 KB text fact. */
  private static Diagnostic flood(int numbers) {
    List<Fact> facts = new ArrayList<>();
    for (int i = 0; i < numbers; i++) {
      String name = String.format("n%03d", i) + "_".repeat(60);
      facts.add(Fact.unsigned(name, -1L - i));
      facts.add(Fact.text("t" + i, "\u00e9".repeat(1000)).at(Location.inStatement(i, i, i, i)));
    }
    return new Diagnostic("query.budget_exhausted", Cause.BUDGET_EXHAUSTED, "m".repeat(5000),
        Outcome.FAILED, Stage.EXECUTION, MAX_IDENTITY, facts, List.of(Action.values()), false,
        WITNESS, BASIS, BUDGETS);
  }

  /** The most number facts {@link #flood} can carry within the bound. */
  private static int mostNumbers() {
    int n = 0;
    while (DiagnosticEncoder.exactBytes(flood(n + 1)) <= Diagnostic.MAX_BYTES) {
      n++;
    }
    return n;
  }

  @Test
  void everyNumberFactSurvivesAtTheLimit() throws Exception {
    int n = mostNumbers();
    assertTrue(n >= 20 && n <= 25, "the bound holds " + n + " long-named u64 facts");
    Diagnostic d = flood(n);
    byte[] bytes = d.toJson();
    // At the limit: one number fact more would not fit even without any text.
    assertTrue(bytes.length <= Diagnostic.MAX_BYTES, "size " + bytes.length);
    assertTrue(bytes.length > Diagnostic.MAX_BYTES - 100, "size " + bytes.length);
    DiagnosticPropertyTest.strictUtf8(bytes);
    JsonNode root = JSON.readTree(bytes);
    List<String> numbers = new ArrayList<>();
    for (JsonNode f : root.get("facts")) {
      assertEquals("number", f.get("kind").asText(), "only text facts are dropped: " + f);
      numbers.add(f.get("name").asText() + "=" + f.get("value").asText());
    }
    List<String> expected = new ArrayList<>();
    for (Fact f : d.facts()) {
      if (f.kind() == Fact.Kind.NUMBER) {
        expected.add(f.name() + "=" + f.value());
      }
    }
    assertEquals(expected, numbers, "every number fact, exact and in order");
    assertEquals(n, root.get("facts_omitted").asInt(), "the text facts are counted");
    assertTrue(root.get("truncated").asBoolean() && root.get("message_truncated").asBoolean());
    assertEquals(Long.toUnsignedString(-1L), root.get("identity").get("namespace").asText());
    assertEquals("18446744073709551614", root.get("witness").get("correlation").asText());
    assertEquals(BASIS.declarationSha256(), root.get("basis").get("declaration_sha256").asText());
    assertEquals("18446744073709551615", root.get("budgets").get(0).get("required").asText());
    assertEquals(Action.values().length, root.get("actions").size());
    DiagnosticPropertyTest.verify(d, bytes);
  }

  @Test
  void theLargestEnvelopeWithoutFactsTakesUnderHalfTheBound() {
    String token = "e".repeat(64);
    List<Budget> budgets = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      budgets.add(new Budget("b" + "x".repeat(63), -1L, -1L));
    }
    // A message of control characters: each is 6 bytes of JSON escape after the 32-byte cut.
    Diagnostic widest = new Diagnostic("q" + ".z".repeat(31) + "z", Cause.INVALID_CALLER_FIELD,
        "\u0001".repeat(5000), Outcome.NOT_ADMITTED, Stage.AUTHENTICATION, MAX_IDENTITY,
        List.of(Fact.text("t", "x".repeat(9000))), List.of(Action.values()), true,
        new Witness(Witness.Source.NATIVE_REJECTION, Stage.AUTHENTICATION, "q" + ".z".repeat(31) + "z",
            -1L, -1L, "f".repeat(64)),
        new Basis("f".repeat(64), token, token), budgets);
    int bytes = DiagnosticEncoder.exactBytes(widest);
    assertTrue(bytes < Diagnostic.MAX_BYTES / 2, "exact envelope without facts: " + bytes);
  }

  @Test
  void oneExactFactMoreIsRefusedAndTheStatusStillGoesOut() {
    Diagnostic over = flood(mostNumbers() + 1);
    assertThrows(IllegalArgumentException.class, over::toJson);
    GatewayException e = GatewayException.of(Cause.BUDGET_EXHAUSTED, "query.budget_exhausted",
            "too much")
        .at(Stage.EXECUTION).withOutcome(Outcome.FAILED).withIdentity(MAX_IDENTITY)
        .withActions(Action.values()).withWitness(WITNESS).withBasis(BASIS)
        .withBudget(BUDGETS.get(0)).withBudget(BUDGETS.get(1)).withMessageCut();
    for (Fact f : over.facts()) {
      e = e.with(f);
    }
    StatusRuntimeException s = new ErrorMapper().toGrpc(e);
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, s.getStatus().getCode());
    assertEquals("query.budget_exhausted: too much", s.getStatus().getDescription());
    assertTrue(s.getTrailers().get(ErrorMapper.TRAILER) == null,
        "no trailer rather than inexact numbers");
  }

  @Test
  void textCutAtItsSourceIsFlaggedWithoutShortening() throws Exception {
    GatewayException e = GatewayException.of(Cause.INVALID_REQUEST, "query.unknown_column",
            "unknown column \"wwwwwwwwww...\"")
        .with(Fact.cutText("column", "wwwwwwwwww..."))
        .with("table", "primitive")
        .withMessageCut();
    byte[] bytes = new ErrorMapper().diagnosticBytes(e);
    JsonNode root = JSON.readTree(bytes);
    assertTrue(bytes.length < 1024, "small: nothing for the encoder to shorten");
    assertEquals("unknown column \"wwwwwwwwww...\"", root.get("message").asText());
    assertTrue(root.get("message_truncated").asBoolean());
    JsonNode column = root.get("facts").get(0);
    assertEquals("wwwwwwwwww...", column.get("value").asText());
    assertTrue(column.get("truncated").asBoolean());
    assertFalse(root.get("facts").get(1).has("truncated"));
    assertTrue(root.get("truncated").asBoolean());
    assertThrows(IllegalArgumentException.class,
        () -> new Fact("n", Fact.Kind.NUMBER, "1", null, true), "numbers are never cut");
  }

  @Test
  void accessClassFailuresNeverCarryTheSharedTerms() throws Exception {
    ErrorMapper mapper = new ErrorMapper();
    for (Cause c : Cause.values()) {
      GatewayException e = GatewayException.of(c, "sample." + c.name().toLowerCase(), "m")
          .withIdentity(new Identity(7L, 9L, 7L, 10L))
          .with(Fact.unsigned("limit", 5))
          .withWitness(WITNESS).withBasis(BASIS).withBudget(BUDGETS.get(0));
      JsonNode root = JSON.readTree(mapper.diagnosticBytes(e));
      boolean access = c == Cause.UNAUTHENTICATED || c == Cause.ACCESS_DENIED
          || c == Cause.TICKET_SCOPE;
      for (String term : List.of("witness", "basis", "budgets")) {
        assertEquals(!access, root.has(term), c + " " + term + ": " + root);
      }
      assertEquals(access, root.get("identity").isEmpty(), c + ": " + root);
      assertEquals(access, root.get("facts").isEmpty(), c + ": " + root);
    }
  }

  @Test
  void aWitnessOrBasisAlreadyPresentIsNeverOverridden() {
    Witness later = Witness.compiler("query.syntax");
    GatewayException e = QueryCode.INVALID_PLAN.failure("x").withWitness(WITNESS)
        .withWitness(later).withBasis(BASIS)
        .withBasis(Basis.of(new byte[] {
          1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
          25, 26, 27, 28, 29, 30, 31, 32}, "other", "1"));
    assertEquals(WITNESS, e.witness());
    assertEquals(BASIS, e.basis());
  }
}
