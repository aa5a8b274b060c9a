package io.transit.flight.server.transport;

import io.grpc.Attributes;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.ServerTransportFilter;
import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandler;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Error;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Exception;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * One open HTTP/2 stream per connection from the connection's first byte, and a way for a call to
 * reset its stream.
 *
 * <p><b>The bound.</b> gRPC advertises MAX_CONCURRENT_STREAMS 1 ({@code
 * maxConcurrentCallsPerConnection}), but Netty holds the peer to it only once the peer ACKs those
 * SETTINGS; a peer that never does, without any credential, could open streams without bound
 * until its connection's authentication budget ends it — about 2.6 KB of heap per 15-byte
 * HEADERS frame, enough to exhaust a 1 GiB heap from three connections in seconds (2026-12-06).
 * From the first read a stream past the first is refused (RST_STREAM REFUSED_STREAM, which gRPC
 * clients retry by themselves), as the SETTINGS say it would be after the ACK. Plaintext
 * connections have gRPC's HTTP/2 handler before their first read. Over TLS the handler arrives
 * with the handshake's end, possibly within a read that also carries the first frames: at most
 * that one read's streams (a read is at most 64 KiB) go unbounded.
 *
 * <p><b>The reset.</b> gRPC reports a new connection to its transport filters ({@link #FILTER})
 * while it reads the peer's first SETTINGS, inside this handler's read: the filter then gives the
 * connection's attributes a {@link Reset} ({@link #RESET}), which every call on it sees. A
 * connection carries one open stream at a time, but calls one after another: the reset therefore
 * runs on the connection's event loop and only while the calling stream is still open there,
 * which its {@link #STREAM_END} tells exactly, since the transport reports a stream's end ({@link
 * #ENDS}' {@code streamClosed}) on that same loop. The one open stream is then the caller's, so
 * resetting the open streams resets exactly that call's (until 2026-12-07 the check was made
 * elsewhere, on gRPC's report of the call's end, which can lag on a busy executor: a reset could
 * reach the connection's next call). It goes through gRPC's own stream-error path (its
 * transport reports the call cancelled, RST_STREAM CANCEL goes out, what was queued for the
 * stream is dropped).
 *
 * <p><b>The frames.</b> With the bound it puts the connection's {@link FrameBudget} in place.
 *
 * <p>Added first to each accepted connection's pipeline by {@link #installer}'s handler, which
 * sits in the listener's server channel; it removes itself once it has done all three.
 *
 * <p>Threads: the connection's event loop (the installer: the listener's boss loop; {@link
 * #ENDS}' tracer completes its stream's end there too); {@link Reset#resetStreams} from any
 * thread, which posts to that loop and asks its {@code stillOpen} there.
 */
public final class StreamBound extends ChannelInboundHandlerAdapter {
  /** The most streams a peer may have open on one connection: the SETTINGS' own value. */
  static final int MAX_STREAMS = 1;

  /**
   * For a listener's server channel: puts a {@link StreamBound} first in each connection, whose
   * {@link FrameBudget} allows {@code maxFrames} per {@code windowMs} and counts each connection
   * it closes in {@code closed}.
   */
  static ChannelHandler installer(int maxFrames, long windowMs, AtomicLong closed) {
    return new Installer(maxFrames, windowMs, closed);
  }

  /** In a call's transport attributes: resets the streams of the call's connection. */
  static final Attributes.Key<Reset> RESET = Attributes.Key.create("transit.stream.reset");

  /** gRPC's new-connection hook: hands the connection being read its {@link Reset}. */
  static final ServerTransportFilter FILTER = new ServerTransportFilter() {
    @Override
    public Attributes transportReady(Attributes attributes) {
      StreamBound reading = READING.get();
      if (reading == null) {
        return attributes;
      }
      reading.handedOver = true;
      // The channel is captured here, on the event loop: the Reset runs on the deadline timer.
      Channel channel = reading.channel;
      return attributes.toBuilder()
          .set(RESET, (why, stillOpen) -> resetStreams(channel, why, stillOpen))
          .build();
    }
  };

  /**
   * A stream's end as its transport sees it: completed (on the connection's event loop) when the
   * stream closes, its status written after every message or the stream reset. In the Context of
   * each call on a listener that has {@link #ENDS}.
   */
  static final Context.Key<CompletableFuture<Void>> STREAM_END =
      Context.key("transit.stream.end");

  /** gRPC's per-stream hook: gives each call its {@link #STREAM_END}. */
  static final ServerStreamTracer.Factory ENDS = new ServerStreamTracer.Factory() {
    @Override
    public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
      return new End();
    }
  };

  /** One stream's {@link #STREAM_END}: created and completed on its connection's event loop. */
  private static final class End extends ServerStreamTracer {
    private final CompletableFuture<Void> closed = new CompletableFuture<>();

    @Override
    public Context filterContext(Context context) {
      return context.withValue(STREAM_END, closed);
    }

    @Override
    public void streamClosed(Status status) {
      closed.complete(null);
    }
  }

  /** Resets a connection's open stream, as a stream error of its own would. */
  @FunctionalInterface
  interface Reset {
    /**
     * Posts the reset to the connection's event loop, where it runs only if {@code stillOpen}
     * (asked there) says the calling stream has not ended; {@code why} goes to gRPC's debug log.
     */
    void resetStreams(String why, BooleanSupplier stillOpen);
  }

  // The connection whose bytes this thread is passing to gRPC now (its event loop): what the
  // filter, called inside that, attaches its Reset to.
  private static final ThreadLocal<StreamBound> READING = new ThreadLocal<>();

  private final int maxFrames;
  private final long windowMs;
  private final AtomicLong closedForFrames;

  // Event loop only.
  private Channel channel;
  private boolean bounded;
  private boolean handedOver;

  private StreamBound(int maxFrames, long windowMs, AtomicLong closedForFrames) {
    this.maxFrames = maxFrames;
    this.windowMs = windowMs;
    this.closedForFrames = closedForFrames;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    boolean firstRead = channel == null;
    channel = ctx.channel();
    if (!bounded) {
      Http2ConnectionHandler http2 = ctx.pipeline().get(Http2ConnectionHandler.class);
      if (http2 != null) {
        http2.connection().remote().maxActiveStreams(MAX_STREAMS);
        // Plaintext: gRPC's handler is there before the first read, and sees every byte after.
        FrameBudget.install(http2, ctx.pipeline().context(http2), maxFrames, windowMs,
            closedForFrames, firstRead && ctx.pipeline().get(SslHandler.class) == null);
        bounded = true;
      }
    }
    READING.set(this);
    try {
      ctx.fireChannelRead(msg);
    } finally {
      READING.remove();
    }
    if (bounded && handedOver) {
      ctx.pipeline().remove(this);
    }
  }

  private static void resetStreams(Channel c, String why, BooleanSupplier stillOpen) {
    c.eventLoop().execute(() -> {
      Http2ConnectionHandler http2 = c.pipeline().get(Http2ConnectionHandler.class);
      if (http2 == null || !stillOpen.getAsBoolean()) {
        return; // the connection is gone, or the stream ended: another call may be open now
      }
      ChannelHandlerContext at = c.pipeline().context(http2);
      List<Integer> open = new ArrayList<>();
      try {
        http2.connection().forEachActiveStream(stream -> open.add(stream.id()));
      } catch (Http2Exception e) {
        return; // the visitor throws nothing; the signature does
      }
      for (int id : open) {
        http2.onError(at, true, Http2Exception.streamError(id, Http2Error.CANCEL, "%s", why));
      }
    });
  }

  @ChannelHandler.Sharable
  private static final class Installer extends ChannelInboundHandlerAdapter {
    private final int maxFrames;
    private final long windowMs;
    private final AtomicLong closed;

    Installer(int maxFrames, long windowMs, AtomicLong closed) {
      this.maxFrames = maxFrames;
      this.windowMs = windowMs;
      this.closed = closed;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (msg instanceof Channel child) {
        // Before the acceptor registers the connection: the handler is added with it.
        child.pipeline().addFirst(new StreamBound(maxFrames, windowMs, closed));
      }
      ctx.fireChannelRead(msg);
    }
  }
}
