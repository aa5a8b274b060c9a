package io.transit.flight.server.request;

import io.grpc.HandlerRegistry;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerMethodDefinition;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;

/**
 * The answer to a path no service of the daemon serves (another service, a method name a client
 * invented): UNIMPLEMENTED {@code flight.unknown_method} with a fixed message and the Diagnostic
 * v1 trailer, like every other refusal. Without it gRPC answers by itself, before any of the
 * daemon's code: UNIMPLEMENTED "Method not found: " followed by the caller's path, and no
 * trailer.
 *
 * <p>Installed as the server's fallback registry, consulted only after the registered services
 * (Flight, health) did not name the path. The refusal passes through {@code interceptors} (the
 * request id), and is logged as a client fault (rate-limited, {@link ClientFaultLog}) with the
 * caller unnamed: no credential is checked for a method that does not exist.
 *
 * <p>Threads: {@link #lookupMethod} runs on gRPC's executor for each unknown call; the handler
 * closes the call on that call's serialized executor. Stateless apart from the shared, thread-safe
 * fault log. Ownership: a request message that arrives anyway is closed by the listener.
 */
public final class UnknownMethods extends HandlerRegistry {
  static final String CODE = "flight.unknown_method";
  private static final String MESSAGE = "no such method: the gateway serves Arrow Flight (SQL)"
      + " and gRPC health";

  private final ErrorMapper errors;
  private final ClientFaultLog faults;
  private final List<ServerInterceptor> interceptors;

  /** {@code interceptors} in the order of {@code ServerInterceptors.intercept}: last runs first. */
  public UnknownMethods(ErrorMapper errors, ClientFaultLog faults,
      List<ServerInterceptor> interceptors) {
    this.errors = errors;
    this.faults = faults;
    this.interceptors = List.copyOf(interceptors);
  }

  @Override
  public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
    MethodDescriptor<InputStream, InputStream> method =
        MethodDescriptor.<InputStream, InputStream>newBuilder(MalformedRequests.RAW,
                MalformedRequests.RAW)
            .setType(MethodDescriptor.MethodType.UNKNOWN).setFullMethodName(methodName).build();
    ServerCallHandler<InputStream, InputStream> handler = this::refuse;
    for (ServerInterceptor i : interceptors) {
      ServerCallHandler<InputStream, InputStream> next = handler;
      handler = (call, headers) -> i.interceptCall(call, headers, next);
    }
    return ServerMethodDefinition.create(method, handler);
  }

  private ServerCall.Listener<InputStream> refuse(ServerCall<InputStream, InputStream> call,
      Metadata headers) {
    faults.fault("-", call.getMethodDescriptor().getFullMethodName(), CODE);
    errors.close(call, GatewayException.of(Cause.UNSUPPORTED, CODE, MESSAGE));
    return new ServerCall.Listener<>() {
      @Override
      public void onMessage(InputStream message) {
        try {
          message.close();
        } catch (IOException | RuntimeException ignored) {
          // Only its own buffer is at stake; gRPC frees the frame.
        }
      }
    };
  }
}
