package io.transit.flight.diagnostic;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A failure the gateway reports to a caller: a {@link Cause} (which decides the gRPC status), a
 * stable diagnostic code such as {@code query.namespace_conflict}, a short safe message, and the
 * facts the Diagnostic v1 trailer carries. Nothing in it may hold credential material, full SQL
 * or stored row values.
 */
public final class GatewayException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Cause cause;
  private final String code;
  private final Map<String, Object> facts;

  public GatewayException(Cause cause, String code, String message) {
    this(cause, code, message, null, Map.of());
  }

  public GatewayException(Cause cause, String code, String message, Throwable underlying) {
    this(cause, code, message, underlying, Map.of());
  }

  private GatewayException(
      Cause cause, String code, String message, Throwable underlying, Map<String, Object> facts) {
    super(message, underlying, false, underlying != null);
    this.cause = cause;
    this.code = code;
    this.facts = new LinkedHashMap<>(facts);
  }

  /** Returns a copy carrying one more fact (kept in insertion order). */
  public GatewayException with(String key, Object value) {
    GatewayException copy = new GatewayException(cause, code, getMessage(), getCause(), facts);
    copy.facts.put(key, value);
    copy.setStackTrace(getStackTrace());
    return copy;
  }

  public Cause kind() {
    return cause;
  }

  public String code() {
    return code;
  }

  public Map<String, Object> facts() {
    return Collections.unmodifiableMap(facts);
  }

  public static GatewayException of(Cause cause, String code, String message) {
    return new GatewayException(cause, code, message);
  }
}
