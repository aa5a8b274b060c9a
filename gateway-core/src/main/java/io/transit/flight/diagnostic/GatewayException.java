package io.transit.flight.diagnostic;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A failure the gateway reports to a caller: a {@link Cause} (which decides the gRPC status), a
 * stable diagnostic code such as {@code query.namespace_conflict}, a short safe message, and the
 * facts the Diagnostic v1 trailer carries. Nothing in it may hold credential material, full SQL
 * or stored row values.
 *
 * <p>Immutable once thrown: every {@code with…} method returns a copy. Optional detail (stage,
 * outcome, identity, actions) defaults to the cause's entry in {@link Recovery}; {@link
 * ErrorMapper} turns the whole into a status, a bounded message and a Diagnostic v1.
 */
public final class GatewayException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Cause cause;
  private final String code;
  private final Map<String, Object> facts;
  /** The engine's code as a type, or null when the code is not one of {@link QueryCode}'s. */
  private final QueryCode queryCode;
  private final transient Detail detail;

  /**
   * The optional parts of the diagnostic envelope; null fields mean "use the default" (none for
   * witness and basis). {@code messageCut}: the message holds text cut where it was made.
   */
  private record Detail(Stage stage, Outcome outcome, Identity identity, List<Action> actions,
      boolean messageCut, Witness witness, Basis basis, List<Budget> budgets) {
    static final Detail EMPTY =
        new Detail(null, null, Identity.NONE, null, false, null, null, List.of());

    Detail stage(Stage s) {
      return new Detail(s, outcome, identity, actions, messageCut, witness, basis, budgets);
    }

    Detail outcome(Outcome o) {
      return new Detail(stage, o, identity, actions, messageCut, witness, basis, budgets);
    }

    Detail identity(Identity i) {
      return new Detail(stage, outcome, i, actions, messageCut, witness, basis, budgets);
    }

    Detail actions(List<Action> a) {
      return new Detail(stage, outcome, identity, a, messageCut, witness, basis, budgets);
    }

    Detail messageCut(boolean cut) {
      return new Detail(stage, outcome, identity, actions, cut, witness, basis, budgets);
    }

    Detail witness(Witness w) {
      return new Detail(stage, outcome, identity, actions, messageCut, w, basis, budgets);
    }

    Detail basis(Basis b) {
      return new Detail(stage, outcome, identity, actions, messageCut, witness, b, budgets);
    }

    Detail budget(Budget b) {
      List<Budget> more = new java.util.ArrayList<>(budgets);
      more.add(b);
      return new Detail(stage, outcome, identity, actions, messageCut, witness, basis,
          List.copyOf(more));
    }
  }

  public GatewayException(Cause cause, String code, String message) {
    this(cause, code, null, message, null, Map.of(), Detail.EMPTY);
  }

  public GatewayException(Cause cause, String code, String message, Throwable underlying) {
    this(cause, code, null, message, underlying, Map.of(), Detail.EMPTY);
  }

  /** Through {@link QueryCode#failure}: the only way a failure gets a {@link #queryCode()}. */
  GatewayException(QueryCode queryCode, String message, Throwable underlying) {
    this(queryCode.cause(), queryCode.code(), queryCode, message, underlying, Map.of(),
        Detail.EMPTY);
  }

  private GatewayException(
      Cause cause,
      String code,
      QueryCode queryCode,
      String message,
      Throwable underlying,
      Map<String, Object> facts,
      Detail detail) {
    super(message, underlying, false, underlying != null);
    this.cause = cause;
    this.code = code;
    this.queryCode = queryCode;
    this.facts = new LinkedHashMap<>(facts);
    this.detail = detail;
  }

  private GatewayException copy(Detail newDetail) {
    GatewayException copy =
        new GatewayException(cause, code, queryCode, getMessage(), getCause(), facts, newDetail);
    copy.setStackTrace(getStackTrace());
    return copy;
  }

  /** Returns a copy carrying one more fact (kept in insertion order). */
  public GatewayException with(String key, Object value) {
    GatewayException copy = copy(detail);
    copy.facts.put(key, value);
    return copy;
  }

  /** Returns a copy carrying {@code fact} under its own name. */
  public GatewayException with(Fact fact) {
    return with(fact.name(), fact);
  }

  /**
   * Returns a copy with another safe message (facts, stage, outcome, identity and the rest kept;
   * a message built from a cut one stays flagged cut).
   */
  public GatewayException withMessage(String message) {
    GatewayException copy =
        new GatewayException(cause, code, queryCode, message, getCause(), facts, detail);
    copy.setStackTrace(getStackTrace());
    return copy;
  }

  /** Returns a copy naming the stage of the call that failed. */
  public GatewayException at(Stage stage) {
    return copy(detail.stage(stage));
  }

  /** Returns a copy with an outcome other than the cause's default. */
  public GatewayException withOutcome(Outcome outcome) {
    return copy(detail.outcome(outcome));
  }

  /** Returns a copy carrying the query identity (left out for access-class causes). */
  public GatewayException withIdentity(Identity identity) {
    return copy(detail.identity(identity));
  }

  /** Returns a copy recommending {@code actions} instead of the cause's defaults. */
  public GatewayException withActions(Action... actions) {
    return copy(detail.actions(List.of(actions)));
  }

  /**
   * Returns a copy whose message is flagged as holding cut text ({@code message_truncated}): the
   * thrower bounded it, or caller text inside it, before the encoder saw it.
   */
  public GatewayException withMessageCut() {
    return copy(detail.messageCut(true));
  }

  /**
   * Returns a copy carrying the original runtime witness; a witness already present is kept, so
   * a later presentation never overrides the original (left out for access-class causes).
   */
  public GatewayException withWitness(Witness witness) {
    return detail.witness != null ? this : copy(detail.witness(witness));
  }

  /**
   * Returns a copy carrying the frozen basis; a basis already present is kept (left out for
   * access-class causes).
   */
  public GatewayException withBasis(Basis basis) {
    return detail.basis != null ? this : copy(detail.basis(basis));
  }

  /** Returns a copy carrying one more exact budget (left out for access-class causes). */
  public GatewayException withBudget(Budget budget) {
    return copy(detail.budget(budget));
  }

  public Cause kind() {
    return cause;
  }

  public String code() {
    return code;
  }

  /**
   * The engine's failure as a type, for classifying it (never compare {@link #code()} strings):
   * set when the failure was built by {@link QueryCode#failure}, null otherwise.
   */
  public QueryCode queryCode() {
    return queryCode;
  }

  public Map<String, Object> facts() {
    return Collections.unmodifiableMap(facts);
  }

  /** The stage, or null when not named. */
  public Stage stage() {
    return detail == null ? null : detail.stage;
  }

  public Outcome outcome() {
    return detail == null || detail.outcome == null ? Recovery.outcome(cause) : detail.outcome;
  }

  public Identity identity() {
    return detail == null || detail.identity == null ? Identity.NONE : detail.identity;
  }

  public List<Action> actions() {
    return detail == null || detail.actions == null ? Recovery.actions(cause) : detail.actions;
  }

  /** Whether the message holds text cut before it reached the encoder. */
  public boolean messageCut() {
    return detail != null && detail.messageCut;
  }

  /** The original runtime witness, or null. */
  public Witness witness() {
    return detail == null ? null : detail.witness;
  }

  /** The frozen basis, or null. */
  public Basis basis() {
    return detail == null ? null : detail.basis;
  }

  /** The exact budgets the failure is about, in the order added. */
  public List<Budget> budgets() {
    return detail == null ? List.of() : detail.budgets;
  }

  public static GatewayException of(Cause cause, String code, String message) {
    return new GatewayException(cause, code, message);
  }
}
