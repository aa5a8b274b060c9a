package io.transit.flight.server.auth;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Authenticates every RPC and applies the header rules before any Flight code runs.
 *
 * <ul>
 *   <li>Exactly one {@code authorization: Bearer <token>} value naming a configured credential;
 *       otherwise UNAUTHENTICATED with no detail (nothing about the call is disclosed).
 *       Connection reuse grants nothing: the check runs per call.
 *   <li>Caller-supplied overrides are refused (INVALID_ARGUMENT): any {@code x-transit-*} header
 *       except {@code x-transit-request-sequence}, and the principal/upstream/resource override
 *       names in {@link #OVERRIDES}.
 *   <li>Handshake answers UNIMPLEMENTED: no token is minted, and connection reuse grants nothing.
 *   <li>The sequence header's values are passed on, unparsed, in {@link #SEQUENCE}; statement
 *       GetFlightInfo alone interprets them (ADBC sends statement headers on every RPC).
 * </ul>
 *
 * <p>Runs on the call's executor thread (the service executor, {@code transit-grpc}: grpc-java
 * looks the method up and starts the call, interceptors included, there, not on the transport's
 * event loop); stateless apart from the shared {@link Authorization}.
 */
public final class AuthInterceptor implements ServerInterceptor {
  public static final Context.Key<CallerBinding> CALLER = Context.key("transit.caller");
  public static final Context.Key<List<String>> SEQUENCE = Context.key("transit.sequence");
  public static final String SEQUENCE_HEADER = "x-transit-request-sequence";

  static final Set<String> OVERRIDES = Set.of(
      "x-principal", "x-native-principal", "x-upstream", "x-resource", "x-forwarded-user",
      "x-remote-user", "x-auth-request-user");

  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  private static final Metadata.Key<String> SEQUENCE_KEY =
      Metadata.Key.of(SEQUENCE_HEADER, Metadata.ASCII_STRING_MARSHALLER);

  private static final String HANDSHAKE =
      org.apache.arrow.flight.impl.FlightServiceGrpc.getHandshakeMethod().getFullMethodName();

  private final Authorization authorization;
  private final ErrorMapper errors;

  public AuthInterceptor(Authorization authorization, ErrorMapper errors) {
    this.authorization = authorization;
    this.errors = errors;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    Optional<CallerBinding> caller = authenticate(headers);
    if (caller.isEmpty()) {
      // The mapper gives UNAUTHENTICATED a fixed message and no trailer: nothing is disclosed.
      close(call, GatewayException.of(Cause.UNAUTHENTICATED, "auth.unauthenticated",
          "no valid Bearer credential"));
      return new ServerCall.Listener<>() {};
    }
    if (HANDSHAKE.equals(call.getMethodDescriptor().getFullMethodName())) {
      // Authentication is per call with the Bearer credential; no session token is ever minted.
      close(call, GatewayException.of(Cause.UNSUPPORTED, "flight.unimplemented",
          "Handshake is not implemented: send the Bearer credential on every call"));
      return new ServerCall.Listener<>() {};
    }
    for (String key : headers.keys()) {
      String k = key.toLowerCase(Locale.ROOT);
      if ((k.startsWith("x-transit-") && !k.equals(SEQUENCE_HEADER)) || OVERRIDES.contains(k)) {
        close(call, GatewayException.of(Cause.INVALID_CALLER_FIELD, "auth.override_header",
            "header " + k + " is a caller-supplied override and is refused"));
        return new ServerCall.Listener<>() {};
      }
    }
    List<String> sequence = new ArrayList<>();
    Iterable<String> values = headers.getAll(SEQUENCE_KEY);
    if (values != null) {
      values.forEach(sequence::add);
    }
    Context ctx = Context.current()
        .withValue(CALLER, caller.get())
        .withValue(SEQUENCE, List.copyOf(sequence));
    return Contexts.interceptCall(ctx, call, headers, next);
  }

  private void close(ServerCall<?, ?> call, GatewayException e) {
    errors.close(call, e);
  }

  private Optional<CallerBinding> authenticate(Metadata headers) {
    Iterable<String> values = headers.getAll(AUTHORIZATION);
    if (values == null) {
      return Optional.empty();
    }
    String only = null;
    int count = 0;
    for (String v : values) {
      only = v;
      count++;
    }
    if (count != 1 || only.length() < 8 || !only.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return Optional.empty();
    }
    return authorization.authenticate(only.substring(7).strip());
  }
}
