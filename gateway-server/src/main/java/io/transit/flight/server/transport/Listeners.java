package io.transit.flight.server.transport;

import io.grpc.Server;
import io.grpc.HandlerRegistry;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelFactory;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.Limits;
import io.transit.flight.server.config.ResolvedConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gRPC servers of one daemon: TCP on {@code listen.host:port} (plaintext, or TLS with {@code
 * listen.tls}) and, with {@code listen.unix_socket}, a plaintext Unix domain socket for an edge on
 * the same host. Both carry the same service, executor, connection budget and transport limits.
 *
 * <p>Threads: built, started and stopped by the daemon's main/shutdown thread; gRPC's own
 * threads do the rest. The Unix socket's epoll event loops are owned here and shut down after
 * its server terminated.
 */
public final class Listeners {
  private static final Logger log = LoggerFactory.getLogger(Listeners.class);
  /** S_IFMT and S_IFSOCK from stat(2): only a stale socket is ever removed at start. */
  private static final int S_IFMT = 0170000;
  private static final int S_IFSOCK = 0140000;

  private final Server tcp; // null when listen.tcp is false
  private final Server unix; // null without listen.unix_socket
  private final Path socketPath;
  private final List<EventLoopGroup> loops = new ArrayList<>();
  private final AtomicLong closedForFrames = new AtomicLong(); // the event loops increment it

  private Listeners(ResolvedConfig cfg, ServerServiceDefinition service, Executor executor,
      ConnectionBudget budget, Extras extras) throws ConfigException {
    ResolvedConfig.Transport t = cfg.transport();
    Limits limits = cfg.limits();
    // Refused before any event loop exists, so a refusal leaves no thread behind.
    if (t.unixSocket() != null && !Epoll.isAvailable()) {
      throw new ConfigException("listen.unix_socket: needs Linux epoll, unavailable here: "
          + Epoll.unavailabilityCause());
    }
    if (t.tcp()) {
      NettyServerBuilder b = NettyServerBuilder.forAddress(new InetSocketAddress(cfg.host(), cfg.port()));
      if (t.tls()) {
        b.sslContext(serverTls(t));
      }
      // NIO with loops of our own: the server channel must be ours to see each connection.
      // (Epoll, tried on 2026-12-02, showed no latency difference on this VM and one CI run hit
      // a cancel-then-DoGet race the NIO listener had never shown; docs/performance.md.)
      EventLoopGroup boss = new NioEventLoopGroup(1, threads("transit-netty-boss"));
      EventLoopGroup workers = new NioEventLoopGroup(0, threads("transit-netty"));
      loops.add(boss);
      loops.add(workers);
      ChannelFactory<ServerChannel> watched = budget.authentication().serverChannels();
      b.channelFactory(() -> bounded(watched.newChannel(), limits))
          .bossEventLoopGroup(boss)
          .workerEventLoopGroup(workers);
      this.tcp = configure(b, service, executor, budget, limits, extras).build();
    } else {
      this.tcp = null;
    }
    this.socketPath = t.unixSocket();
    if (socketPath != null) {
      EventLoopGroup boss = new EpollEventLoopGroup(1, threads("transit-netty-boss"));
      EventLoopGroup workers = new EpollEventLoopGroup(0, threads("transit-netty"));
      loops.add(boss);
      loops.add(workers);
      NettyServerBuilder b = NettyServerBuilder.forAddress(new DomainSocketAddress(socketPath.toFile()))
          .channelFactory(() -> bounded(new EpollServerDomainSocketChannel(), limits))
          .bossEventLoopGroup(boss)
          .workerEventLoopGroup(workers);
      this.unix = configure(b, service, executor, budget, limits, extras).build();
    } else {
      this.unix = null;
    }
  }

  /**
   * Served beside the Flight service on every listener, outside its interceptors (the health
   * service answers without a credential), a stream tracer that sees every call, and the answer
   * to any other path ({@code fallback}, consulted after the services).
   */
  public record Extras(List<ServerServiceDefinition> services, ServerStreamTracer.Factory tracer,
      HandlerRegistry fallback) {}

  /**
   * Refuses {@code cfg}'s TLS certificate and key unless they load as the listener will load them
   * ({@code check-config}, which otherwise passes a readable file that is not PEM; {@code run},
   * before anything else starts).
   */
  public static void checkTls(ResolvedConfig cfg) throws ConfigException {
    if (cfg.transport().tcp() && cfg.transport().tls()) {
      serverTls(cfg.transport());
    }
  }

  private static SslContext serverTls(ResolvedConfig.Transport t) throws ConfigException {
    try {
      return GrpcSslContexts.forServer(t.tlsCertFile().toFile(), t.tlsKeyFile().toFile()).build();
    } catch (SSLException | IllegalArgumentException e) {
      throw new ConfigException("listen.tls: cannot load certificate " + t.tlsCertFile()
          + " with key " + t.tlsKeyFile() + " (PEM chain and PKCS#8 PEM key expected): "
          + e.getMessage(), e);
    }
  }

  /** Builds (does not start) the listeners of {@code cfg}. */
  public static Listeners build(ResolvedConfig cfg, ServerServiceDefinition service,
      Executor executor, ConnectionBudget budget) throws ConfigException {
    return new Listeners(cfg, service, executor, budget, null);
  }

  /** As {@link #build(ResolvedConfig, ServerServiceDefinition, Executor, ConnectionBudget)}. */
  public static Listeners build(ResolvedConfig cfg, ServerServiceDefinition service,
      Executor executor, ConnectionBudget budget, Extras extras) throws ConfigException {
    return new Listeners(cfg, service, executor, budget, extras);
  }

  private static NettyServerBuilder configure(NettyServerBuilder b, ServerServiceDefinition service,
      Executor executor, ConnectionBudget budget, Limits l, Extras extras) {
    if (extras != null) {
      extras.services().forEach(b::addService);
      b.addStreamTracerFactory(extras.tracer());
      b.fallbackHandlerRegistry(extras.fallback());
    }
    return b.addService(service)
        .executor(executor)
        .addTransportFilter(budget)
        .addTransportFilter(StreamBound.FILTER) // each connection's Reset, for its calls
        .addStreamTracerFactory(StreamBound.ENDS) // each stream's end, on its event loop
        .intercept(budget) // global: refuses before the service's own interceptors run
        .maxConcurrentCallsPerConnection(1)
        .maxInboundMessageSize(l.maxInboundMessageBytes())
        .maxInboundMetadataSize(l.maxInboundMetadataBytes())
        .handshakeTimeout(l.handshakeTimeoutMs(), TimeUnit.MILLISECONDS)
        .keepAliveTime(l.keepaliveTimeMs(), TimeUnit.MILLISECONDS)
        .keepAliveTimeout(l.keepaliveTimeoutMs(), TimeUnit.MILLISECONDS)
        .permitKeepAliveTime(l.permitKeepaliveTimeMs(), TimeUnit.MILLISECONDS)
        .permitKeepAliveWithoutCalls(false)
        .maxConnectionIdle(l.maxConnectionIdleMs(), TimeUnit.MILLISECONDS)
        .maxConnectionAge(l.maxConnectionAgeMs(), TimeUnit.MILLISECONDS)
        .maxConnectionAgeGrace(l.maxConnectionAgeGraceMs(), TimeUnit.MILLISECONDS)
        // HTTP/2 rapid reset (HEADERS then RST_STREAM, over and over): beyond this many resets
        // in the window the connection gets GOAWAY ENHANCE_YOUR_CALM.
        .maxRstFramesPerWindow(l.maxRstFramesPerWindow(),
            (int) Math.max(1, l.rstFramesWindowMs() / 1000));
  }

  /**
   * {@code server}, holding each connection it accepts to one stream from the first byte, and
   * its frames that carry no request to {@code l}'s reset bound ({@link FrameBudget}).
   */
  private ServerChannel bounded(ServerChannel server, Limits l) {
    server.pipeline().addFirst(StreamBound.installer(l.maxRstFramesPerWindow(),
        l.rstFramesWindowMs(), closedForFrames));
    return server;
  }

  /**
   * Connections closed since start for sending more frames that carry no request (or making the
   * server reset more streams) than the reset bound allows ({@link FrameBudget}).
   */
  public long closedForFrames() {
    return closedForFrames.get();
  }

  /** Named event-loop threads (logs, thread dumps and the bench's CPU profile group them). */
  private static ThreadFactory threads(String name) {
    return new DefaultThreadFactory(name);
  }

  /** Binds every listener; on a failure the ones already bound are stopped again. */
  public void start() throws IOException {
    try {
      if (tcp != null) {
        tcp.start();
      }
      if (unix != null) {
        removeStaleSocket(socketPath);
        unix.start();
      }
    } catch (IOException | RuntimeException e) {
      shutdownNow();
      throw e;
    }
  }

  /** The bound TCP port, or -1 when TCP is off. */
  public int port() {
    return tcp != null ? tcp.getPort() : -1;
  }

  public Path socketPath() {
    return socketPath;
  }

  /** Stops accepting connections and calls; running calls continue. */
  public void shutdown() {
    forEach(Server::shutdown);
  }

  /** Cancels running calls. */
  public void shutdownNow() {
    forEach(Server::shutdownNow);
  }

  /** Waits for every server to terminate, then releases the socket file and event loops. */
  public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
    long deadline = System.nanoTime() + unit.toNanos(timeout);
    boolean done = true;
    for (Server s : servers()) {
      done &= s.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    }
    if (done) {
      release();
    }
    return done;
  }

  /**
   * Releases the socket file and event loops now: after {@link #awaitTermination} returned true
   * (it calls this), or at shutdown when calls outlived {@link #shutdownNow}.
   */
  public void release() {
    for (EventLoopGroup g : loops) {
      g.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
    loops.clear();
    if (socketPath != null) {
      try {
        Files.deleteIfExists(socketPath);
      } catch (IOException e) {
        log.warn("could not remove {}: {}", socketPath, e.getMessage());
      }
    }
  }

  private List<Server> servers() {
    List<Server> out = new ArrayList<>(2);
    if (tcp != null) {
      out.add(tcp);
    }
    if (unix != null) {
      out.add(unix);
    }
    return out;
  }

  private void forEach(java.util.function.Consumer<Server> op) {
    servers().forEach(op);
  }

  /**
   * A socket file left by a daemon that was killed would make bind fail; it is removed when
   * nothing accepts on it. A live socket, or any other kind of file, is left alone.
   */
  private static void removeStaleSocket(Path path) throws IOException {
    if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    int mode = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
    if ((mode & S_IFMT) != S_IFSOCK) {
      return;
    }
    try (java.nio.channels.SocketChannel probe =
        java.nio.channels.SocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
      probe.connect(java.net.UnixDomainSocketAddress.of(path));
      throw new IOException(path + ": another process is serving on this socket");
    } catch (java.net.ConnectException refused) {
      Files.delete(path); // nobody listens: left by a daemon that did not stop cleanly
    }
  }
}
