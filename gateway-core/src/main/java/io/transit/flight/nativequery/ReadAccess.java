package io.transit.flight.nativequery;

/**
 * Who is reading, checked by the native engine on every read: the caller's native principal, its
 * selected role (if any), and the source the published Table's data lives in.
 */
public record ReadAccess(long principal, boolean hasRole, long role, long source) {}
