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
 * <p>Immutable; any thread.
 */
public record Diagnostic(
    String code,
    Cause cause,
    String message,
    Outcome outcome,
    Stage stage,
    Identity identity,
    List<Fact> facts,
    List<Action> actions) {
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
    // Duplicates say nothing more and would let a list grow without bound.
    actions = List.copyOf(new LinkedHashSet<>(actions));
  }

  /** The diagnostic of {@code e}: its code, cause, message, facts and detail. */
  public static Diagnostic from(GatewayException e) {
    List<Fact> facts = new ArrayList<>(e.facts().size());
    for (Map.Entry<String, Object> f : e.facts().entrySet()) {
      facts.add(Fact.of(f.getKey(), f.getValue()));
    }
    return new Diagnostic(
        e.code(), e.kind(), e.getMessage(), e.outcome(), e.stage(), e.identity(), facts,
        e.actions());
  }

  /** The same diagnostic without query identity or facts (for access-class failures). */
  public Diagnostic withoutDisclosure() {
    return new Diagnostic(code, cause, message, outcome, stage, Identity.NONE, List.of(), actions);
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
