package io.transit.flight.server.ops;

import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.GrpcMessage;
import io.transit.flight.diagnostic.Outcome;
import java.io.IOException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operator-facing parts of one daemon: the {@code grpc.health.v1} service, the metrics and
 * their listener, and the RPC observer behind the access log.
 *
 * <p>Health: NOT_SERVING from construction, SERVING once {@link #serving} is called (the engine is
 * open and the publications loaded, the listener bound), NOT_SERVING again from {@link #draining}
 * on. Both the overall status ({@code ""}) and the Flight service's name are reported.
 *
 * <p>Threads: built, started and closed on the daemon's main thread; {@link #draining} runs on the
 * stopping thread (the main thread, or the shutdown hook at any other exit). HealthStatusManager is thread-safe.
 */
public final class Operations implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Operations.class);
  /** The Flight service's health name, besides the server-wide "". */
  public static final String FLIGHT_SERVICE = "arrow.flight.protocol.FlightService";
  private static final String WATCH = HealthGrpc.getWatchMethod().getFullMethodName();

  private final OpsSettings settings;
  private final HealthStatusManager health = new HealthStatusManager();
  private final GatewayMetrics metrics = new GatewayMetrics();
  private final RpcObserver observer;
  // The Watch calls open now: added and removed on their calls' threads, ended by the stopping
  // thread (endWatches).
  private final Set<EndableWatch<?, ?>> watches = ConcurrentHashMap.newKeySet();
  private volatile int metricsPort = -1;
  /** Set once the daemon served: only then may an edge have routed calls here. */
  private volatile boolean served;

  public Operations(OpsSettings settings) {
    this.settings = settings;
    this.observer = new RpcObserver(metrics, new AuthFailureLog(TimeUnit.SECONDS.toNanos(10)),
        settings.accessLog());
    setHealth(ServingStatus.NOT_SERVING);
  }

  public OpsSettings settings() {
    return settings;
  }

  /**
   * Health {@code Watch} calls served at once, whoever asks: each is held open until its caller
   * cancels (grpc-services keeps its observer, keyed by the service name the caller chose), and
   * the health service needs no credential; a peer that ignores the one-stream-per-connection
   * setting (HTTP/2 applies it only once the peer acknowledges it) could otherwise open Watches
   * without bound.
   */
  public static final int MAX_HEALTH_WATCHES = 64;

  /**
   * The health service, its answers' messages bounded ({@link GrpcMessage#bound}): grpc-services
   * answers a Check of a name it does not report NOT_FOUND "unknown service " and the caller's
   * name, which may be as long as the whole request message. Its requests are parsed by the
   * caller's {@code MalformedRequests} guard, as the Flight service's are. A {@code Watch} past
   * {@link #MAX_HEALTH_WATCHES} is refused RESOURCE_EXHAUSTED {@code
   * transport.health_watches_exhausted} with its trailer ({@code errors}).
   *
   * <p>Threads: calls start on the service executor; a Watch's permit is given back by its
   * listener's {@code onComplete} or {@code onCancel} (the call's serialized executor), once. A
   * Watch's outbound side (grpc-services' updates from whichever thread sets a status, and {@link
   * #endWatches} from the stopping thread) is serialized by its {@link EndableWatch}.
   */
  public ServerServiceDefinition healthService(ErrorMapper errors) {
    Semaphore watches = new Semaphore(MAX_HEALTH_WATCHES);
    return ServerInterceptors.intercept(health.getHealthService().bindService(),
        new ServerInterceptor() {
          @Override
          public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call,
              Metadata headers, ServerCallHandler<Q, R> next) {
            ServerCall<Q, R> bounded = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
              @Override
              public void close(Status status, Metadata trailers) {
                String text = status.getDescription();
                super.close(text == null ? status : status.withDescription(GrpcMessage.bound(text)),
                    trailers);
              }
            };
            if (!call.getMethodDescriptor().getFullMethodName().equals(WATCH)) {
              return next.startCall(bounded, headers);
            }
            if (!watches.tryAcquire()) {
              errors.close(call, GatewayException.of(
                      Cause.BUDGET_EXHAUSTED, "transport.health_watches_exhausted",
                      "the gateway serves at most " + MAX_HEALTH_WATCHES
                          + " health watches at once; retry later or use Check")
                  .with("limit", MAX_HEALTH_WATCHES)
                  .with("required", MAX_HEALTH_WATCHES + 1)
                  .withOutcome(Outcome.NOT_ADMITTED)
                  .withActions(Action.RETRY_LATER));
              return new ServerCall.Listener<>() {};
            }
            EndableWatch<Q, R> watch = new EndableWatch<>(bounded);
            AtomicBoolean held = new AtomicBoolean(true);
            Runnable release = () -> {
              if (held.getAndSet(false)) {
                Operations.this.watches.remove(watch);
                watches.release();
              }
            };
            Operations.this.watches.add(watch);
            ServerCall.Listener<Q> listener;
            try {
              listener = next.startCall(watch, headers);
            } catch (RuntimeException | Error e) {
              release.run();
              throw e;
            }
            return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
              @Override
              public void onComplete() {
                release.run();
                super.onComplete();
              }

              @Override
              public void onCancel() {
                release.run();
                super.onCancel();
              }
            };
          }
        });
  }

  public RpcObserver observer() {
    return observer;
  }

  public GatewayMetrics metrics() {
    return metrics;
  }

  /** Binds the metrics listener when one is configured. */
  public void startMetrics() throws IOException {
    if (settings.metricsPort() != null) {
      metricsPort = metrics.start(settings.metricsHost(), settings.metricsPort());
      log.info("metrics on http://{}:{}/metrics", settings.metricsHost(), metricsPort);
    }
  }

  /** The bound metrics port, or -1 when there is no listener. */
  public int metricsPort() {
    return metricsPort;
  }

  public void serving() {
    served = true;
    setHealth(ServingStatus.SERVING);
  }

  /**
   * Reports NOT_SERVING at once, when the stop is requested: before the stop waits for a reload
   * under way (which may wait for the journal), so an edge stops routing new work meanwhile.
   * Any thread; {@link #draining} follows.
   */
  public void stopRequested() {
    setHealth(ServingStatus.NOT_SERVING);
  }

  /**
   * Reports NOT_SERVING, then waits {@code ops.drain_notice_ms} while calls are still accepted, so
   * an edge polling health routes new work elsewhere before the listener closes. Not when the
   * daemon never served (a start that failed, e.g. the metrics port taken): no edge routes to it,
   * and the failure should not wait the notice out before its exit.
   */
  public void draining() {
    setHealth(ServingStatus.NOT_SERVING);
    if (served && settings.drainNoticeMs() > 0) {
      log.info("draining: health NOT_SERVING, listener closes in {} ms", settings.drainNoticeMs());
      try {
        Thread.sleep(settings.drainNoticeMs());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Stopping thread, after {@link #draining}: ends every open {@code Watch} (OK, after its
   * NOT_SERVING update), so the listener's stop does not wait its bound out for calls that never
   * end by themselves (until 2026-12-07 one open Watch held every stop 10 s and then got
   * CANCELLED).
   */
  public void endWatches() {
    for (EndableWatch<?, ?> w : watches) {
      w.end();
    }
  }

  /**
   * A Watch call whose sends and close are serialized, so that the stopping thread can end it
   * while grpc-services may still send it an update; nothing is sent after the end.
   */
  private static final class EndableWatch<Q, R>
      extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
    private boolean ended; // guarded by this

    EndableWatch(ServerCall<Q, R> call) {
      super(call);
    }

    @Override
    public synchronized void sendMessage(R message) {
      if (!ended) {
        super.sendMessage(message);
      }
    }

    @Override
    public synchronized void close(Status status, Metadata trailers) {
      if (!ended) {
        ended = true;
        super.close(status, trailers);
      }
    }

    synchronized void end() {
      close(Status.OK, new Metadata());
    }
  }

  private void setHealth(ServingStatus s) {
    health.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, s);
    health.setStatus(FLIGHT_SERVICE, s);
  }

  @Override
  public void close() {
    // Watchers see the final NOT_SERVING and no later change.
    health.enterTerminalState();
    metrics.close();
  }
}
