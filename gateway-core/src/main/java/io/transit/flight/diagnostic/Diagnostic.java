package io.transit.flight.diagnostic;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * One Diagnostic v1 ({@code docs/diagnostic-v1.md}): the machine-readable detail of a failure
 * that travels in the {@code transit-diagnostic-bin} trailer. The status is always the cause's
 * status. {@link #toJson()} gives at most {@link #MAX_BYTES} bytes of UTF-8 JSON, shortening
 * text explicitly when the full form is larger ({@link DiagnosticEncoder}).
 *
 * <p>The shared-contract terms ({@code docs/diagnostic-v1.md}): {@code witness} (the original
 * runtime witness), {@code basis} (the frozen basis) and {@code budgets} (the exact budgets the
 * failure is about) are optional and, like identity, exact: shortening never touches them.
 *
 * <p>Immutable; any thread.
 *
 * @param messageCut whether {@code message} was already cut where it was made (it holds caller
 *     text cut by the compiler, or was itself bounded), so the envelope flags it even when the
 *     encoder shortens nothing
 */
public record Diagnostic(
    String code,
    Cause cause,
    String message,
    Outcome outcome,
    Stage stage,
    Identity identity,
    List<Fact> facts,
    List<Action> actions,
    boolean messageCut,
    Witness witness,
    Basis basis,
    List<Budget> budgets) {
  /** The {@code contract} value of every v1 diagnostic. */
  public static final String CONTRACT = "transit.diagnostic.v1";

  /** Upper bound of the encoded diagnostic, in bytes. */
  public static final int MAX_BYTES = 4096;

  /** Longest code; codes are stable identifiers such as {@code query.namespace_conflict}. */
  public static final int MAX_CODE_LENGTH = 64;

  private static final Pattern CODE = Pattern.compile("[a-z][a-z0-9_]*(\\.[a-z0-9_]+)+");

  public Diagnostic {
    if (code == null || code.length() > MAX_CODE_LENGTH || !CODE.matcher(code).matches()) {
      throw new IllegalArgumentException(
          "code: " + code + " (expected: dotted lowercase identifier, at most 64 characters)");
    }
    if (cause == null || outcome == null) {
      throw new IllegalArgumentException("cause and outcome are required");
    }
    message = Utf8Text.wellFormed(message == null ? "" : message);
    identity = identity == null ? Identity.NONE : identity;
    facts = List.copyOf(facts);
    budgets = budgets == null ? List.of() : List.copyOf(budgets);
    // Duplicates say nothing more and would let a list grow without bound.
    actions = List.copyOf(new LinkedHashSet<>(actions));
  }

  /** A diagnostic without the shared-contract terms, its message whole. */
  public Diagnostic(String code, Cause cause, String message, Outcome outcome, Stage stage,
      Identity identity, List<Fact> facts, List<Action> actions) {
    this(code, cause, message, outcome, stage, identity, facts, actions, false, null, null,
        List.of());
  }

  /** The diagnostic of {@code e}: its code, cause, message, facts and detail. */
  public static Diagnostic from(GatewayException e) {
    List<Fact> facts = new ArrayList<>(e.facts().size());
    for (Map.Entry<String, Object> f : e.facts().entrySet()) {
      facts.add(Fact.of(f.getKey(), f.getValue()));
    }
    return new Diagnostic(
        e.code(), e.kind(), e.getMessage(), e.outcome(), e.stage(), e.identity(), facts,
        e.actions(), e.messageCut(), e.witness(), e.basis(), e.budgets());
  }

  /**
   * The same diagnostic without query identity, facts, witness, basis or budgets (for
   * access-class failures: current authorization precedes any disclosure about a query).
   */
  public Diagnostic withoutDisclosure() {
    return new Diagnostic(code, cause, message, outcome, stage, Identity.NONE, List.of(), actions,
        messageCut, null, null, List.of());
  }

  /** The gRPC status name written as {@code status}. */
  public String status() {
    return cause.code().name();
  }

  /** UTF-8 JSON of at most {@link #MAX_BYTES} bytes. */
  public byte[] toJson() {
    return DiagnosticEncoder.encode(this, MAX_BYTES);
  }
}
