/**
 * Authentication on every RPC: {@link io.transit.flight.server.auth.AuthInterceptor} maps the
 * Bearer credential to a {@link io.transit.flight.server.auth.CallerBinding} through the
 * {@link io.transit.flight.server.auth.CredentialRegistry} and refuses override headers;
 * {@link io.transit.flight.server.auth.CallerContext} reads the binding inside a call.
 *
 * <p>Threads: the interceptor runs on gRPC transport threads; the registry is swapped atomically
 * by reloads on the signal thread.
 */
package io.transit.flight.server.auth;
