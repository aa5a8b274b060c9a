package io.transit.flight.nativequery.embedded;

import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.PrincipalRights;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The current principal registrations and rights. {@link #replace} swaps the whole set in one
 * atomic step (a config reload); every check reads the set current at that moment, so a revoked
 * right takes effect at the next command or read. Any thread may call any method.
 */
final class RightsRegistry {
  private final AtomicReference<Map<Long, PrincipalRights>> current =
      new AtomicReference<>(Map.of());

  RightsRegistry(Collection<PrincipalRights> initial) {
    replace(initial);
  }

  /** Replaces every registration at once; duplicate principals are a configuration error. */
  void replace(Collection<PrincipalRights> rights) {
    Map<Long, PrincipalRights> next = new HashMap<>();
    for (PrincipalRights r : rights) {
      if (next.put(r.principal(), r) != null) {
        throw new IllegalArgumentException(
            "rights: principal " + Long.toUnsignedString(r.principal()) + " listed twice");
      }
    }
    current.set(Map.copyOf(next));
  }

  /** The principal's current rights, or ACCESS_DENIED when it is not registered. */
  PrincipalRights require(long principal) {
    PrincipalRights r = current.get().get(principal);
    if (r == null) {
      throw denied("the principal is not registered with the native system");
    }
    return r;
  }

  static GatewayException denied(String message) {
    return QueryCode.ACCESS_DENIED.failure(message);
  }
}
