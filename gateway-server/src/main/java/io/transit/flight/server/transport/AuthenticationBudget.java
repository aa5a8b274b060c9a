package io.transit.flight.server.transport;

import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelFactory;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandler;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.EventLoop;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.util.AttributeKey;
import io.grpc.netty.shaded.io.netty.util.concurrent.ScheduledFuture;
import java.net.SocketAddress;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code unauthenticated_connection_ms}: a TCP connection that has not started an authenticated
 * call within this budget of its acceptance is closed, so peers that only open connections
 * (or only send the HTTP/2 preface) cannot keep {@code max_connections} slots from the callers
 * that authenticate (issue 14 finding 3). A connection that authenticated once keeps serving
 * until the idle and age limits.
 *
 * <p>gRPC exposes no handle to a connection, so the listener's server channel ({@link
 * #serverChannels}) records every accepted connection by its peer address, and the interceptor
 * ({@link #interceptCall}, placed after authentication) clears the record of the connection a
 * call arrived on — gRPC's {@link Grpc#TRANSPORT_ATTR_REMOTE_ADDR} is that same address.
 *
 * <p>Threads: connections are recorded on the listener's boss event loop, which also runs each
 * budget's timer; calls clear their record on a transport thread; the map is concurrent and a
 * record is removed exactly once (by the call, the timer or the connection's close). The call and
 * the close also cancel the timer (Netty hands a cancel from another thread to the boss loop).
 */
public final class AuthenticationBudget implements ServerInterceptor {
  private static final AttributeKey<ScheduledFuture<?>> TIMER =
      AttributeKey.newInstance("transit.authentication_budget");
  private final long budgetMs;
  private final ConcurrentHashMap<SocketAddress, Channel> pending = new ConcurrentHashMap<>();
  private final AtomicLong closed = new AtomicLong();

  /**
   * @param budgetMs how long a connection may go without an authenticated call. Kept whatever
   *     {@code max_connection_idle_ms} is: the idle limit counts only time without a call, and a
   *     peer without a credential keeps a call going (a health {@code Watch}, refused calls one
   *     after another), so until 2026-12-06, when a budget not below the idle limit was left to
   *     it, such peers could hold every connection slot.
   */
  public AuthenticationBudget(long budgetMs) {
    if (budgetMs < 1) {
      throw new IllegalArgumentException("budgetMs: " + budgetMs + " (expected: >= 1)");
    }
    this.budgetMs = budgetMs;
  }

  /** Connections closed for not authenticating in time, since start. */
  public long closedUnauthenticated() {
    return closed.get();
  }

  /** NIO server channels for a TCP listener that record each accepted connection here. */
  public ChannelFactory<ServerChannel> serverChannels() {
    return () -> {
      ServerChannel ch = new NioServerSocketChannel();
      // First in the server channel's pipeline: it sees each accepted connection before the
      // bootstrap's acceptor (added when the channel registers) hands it to a worker loop.
      ch.pipeline().addFirst(watcher());
      return ch;
    };
  }

  /** The handler that records each connection its server channel accepts (tests: any channel). */
  ChannelHandler watcher() {
    return new Watching();
  }

  private void watch(Channel child, EventLoop timers) {
    SocketAddress peer = child.remoteAddress();
    if (peer == null) {
      return;
    }
    // First in the connection's pipeline, ahead of gRPC's HTTP/2 handler: a close from here goes
    // straight to the socket. child.close() passes through that handler, whose graceful close
    // sends GOAWAY and waits for the open streams (a health Watch: for good), or 10 s for none.
    ChannelHandler first = new ChannelInboundHandlerAdapter();
    ChannelHandlerContext socket = child.pipeline().addFirst(first).context(first);
    pending.put(peer, child);
    ScheduledFuture<?> timer = timers.schedule(() -> {
      if (pending.remove(peer, child)) {
        closed.incrementAndGet();
        socket.close();
      }
    }, budgetMs, TimeUnit.MILLISECONDS);
    // The timer goes as soon as it has nothing left to do: the connection authenticated or
    // closed. Until 2026-12-07 it stayed queued on the boss loop for the whole budget and kept the
    // closed connection's channel (about 1.5 KB of heap) reachable: a budget of 10 minutes held
    // every connection accepted in the last 10 minutes, growing with the connection rate.
    child.attr(TIMER).set(timer);
    child.closeFuture().addListener(f -> {
      pending.remove(peer, child);
      timer.cancel(false);
    });
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    SocketAddress peer = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    if (peer != null) {
      Channel authenticated = pending.remove(peer);
      if (authenticated != null) {
        ScheduledFuture<?> timer = authenticated.attr(TIMER).getAndSet(null);
        if (timer != null) {
          timer.cancel(false);
        }
      }
    }
    return next.startCall(call, headers);
  }

  /** Records each connection its server channel accepts (on that channel's boss loop). */
  private final class Watching extends ChannelInboundHandlerAdapter {
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (msg instanceof Channel child) {
        watch(child, ctx.channel().eventLoop());
      }
      ctx.fireChannelRead(msg);
    }
  }
}
