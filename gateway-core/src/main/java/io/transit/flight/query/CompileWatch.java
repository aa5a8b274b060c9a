package io.transit.flight.query;

import io.transit.flight.diagnostic.GatewayException;
import java.util.Objects;
import net.sf.jsqlparser.parser.CCJSqlParser;

/**
 * Lets another thread abandon one compilation: a timer when the parse budget runs out, a gRPC
 * cancellation listener when the call is cancelled or its deadline passes. Abandoning sets the
 * parser's {@code interrupted} flag — the mechanism JSqlParser's own parse timeout uses
 * ({@code Feature.timeOut}); the parser checks it in its expression productions and stops at the
 * next check — and the compiling thread then throws the failure given here instead of whatever
 * the stopped parse produced.
 *
 * <p>Threads: one compiling thread calls {@link #attach} and {@link #failure}; any thread may
 * call {@link #abandon}, at most the first call counts. Fields are volatile; the parser's own
 * flag is a plain field, which its checks read often enough in practice (as for JSqlParser's
 * timeout).
 */
public final class CompileWatch {
  /** A watch nobody abandons (compilations not made for a caller). */
  public static final CompileWatch NONE = new CompileWatch();

  private volatile CCJSqlParser parser;
  private volatile GatewayException failure;

  /** Abandons the compilation with {@code reason}; later calls are ignored. */
  public void abandon(GatewayException reason) {
    Objects.requireNonNull(reason, "reason");
    if (this == NONE) {
      throw new IllegalStateException("the shared NONE watch cannot be abandoned");
    }
    synchronized (this) {
      if (failure != null) {
        return;
      }
      failure = reason;
    }
    CCJSqlParser p = parser;
    if (p != null) {
      p.interrupted = true;
    }
  }

  /** The reason given to {@link #abandon}, or null while the compilation may run. */
  public GatewayException failure() {
    return failure;
  }

  /** Called by the compiling thread before it parses. */
  void attach(CCJSqlParser p) {
    if (this == NONE) {
      return;
    }
    parser = p;
    // An abandon that ran before the parser was published must still reach it.
    if (failure != null) {
      p.interrupted = true;
    }
  }

  /** Throws the abandon reason, if any. */
  void check() {
    GatewayException f = failure;
    if (f != null) {
      throw f;
    }
  }
}
