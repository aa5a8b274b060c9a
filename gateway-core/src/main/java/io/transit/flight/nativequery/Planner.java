package io.transit.flight.nativequery;

import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.CompileWatch;
import io.transit.flight.query.QueryPlan;

/**
 * Compiles submitted SQL against the published Table it names. The native engine calls it when a
 * submit command is recorded and again when an accepted query resumes after a restart, so it must
 * be deterministic: the same SQL and declaration give the same plan.
 *
 * <p>Called on the thread that sends the submit command (and on the engine's opening thread for
 * resumed queries); implementations must be thread-safe.
 */
@FunctionalInterface
public interface Planner {
  /**
   * The plan, or a {@link io.transit.flight.diagnostic.GatewayException} whose code ({@code
   * query.<code>} or the compiler's own) is recorded as the submit's rejection.
   */
  QueryPlan plan(String sql, TableDeclaration table);

  /**
   * As {@link #plan(String, TableDeclaration)}, abandoned (with the watch's failure) when another
   * thread abandons {@code watch}. A planner that cannot stop a parse ignores the watch.
   */
  default QueryPlan plan(String sql, TableDeclaration table, CompileWatch watch) {
    return plan(sql, table);
  }

  /**
   * The plan when it costs no parse now (a cached one), else null. One look-up: a plan cached
   * when asked and evicted before a second call would otherwise be parsed without a watch.
   */
  default QueryPlan cached(String sql, TableDeclaration table) {
    return null;
  }
}
