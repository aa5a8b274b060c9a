package io.transit.flight.server.auth;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.util.List;

/**
 * Reads the authenticated caller that {@link AuthInterceptor} attached to the current gRPC
 * {@link io.grpc.Context}. Valid only on the thread running the call's handler; capture the
 * binding before handing work to another thread.
 */
public final class CallerContext {
  private CallerContext() {}

  public static CallerBinding caller() {
    CallerBinding b = AuthInterceptor.CALLER.get();
    if (b == null) {
      // Every service is wrapped by the interceptor; reaching here is a wiring defect, and
      // failing closed is the only safe answer.
      throw GatewayException.of(Cause.UNAUTHENTICATED, "auth.unauthenticated", "unauthenticated");
    }
    return b;
  }

  public static List<String> sequenceValues() {
    List<String> v = AuthInterceptor.SEQUENCE.get();
    return v != null ? v : List.of();
  }
}
