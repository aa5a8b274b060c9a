package io.transit.flight.server.transport;

import io.grpc.Attributes;
import io.grpc.ServerTransportFilter;
import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandler;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Error;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Exception;
import java.util.ArrayList;
import java.util.List;

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
 * connection's attributes a {@link Reset} ({@link #RESET}), which every call on it sees. Since a
 * connection carries one stream, resetting the connection's open streams resets exactly that
 * call's; it goes through gRPC's own stream-error path (its transport reports the call
 * cancelled, RST_STREAM CANCEL goes out, what was queued for the stream is dropped).
 *
 * <p>Added first to each accepted connection's pipeline by {@link #INSTALLER}, which sits in the
 * listener's server channel; it removes itself once it has done both.
 *
 * <p>Threads: the connection's event loop ({@link #INSTALLER}: the listener's boss loop); {@link
 * Reset#resetStreams} from any thread, which posts to that loop.
 */
public final class StreamBound extends ChannelInboundHandlerAdapter {
  /** The most streams a peer may have open on one connection: the SETTINGS' own value. */
  static final int MAX_STREAMS = 1;

  /** For a listener's server channel: puts a {@link StreamBound} first in each connection. */
  static final ChannelHandler INSTALLER = new Installer();

  /** In a call's transport attributes: resets the streams of the call's connection. */
  public static final Attributes.Key<Reset> RESET = Attributes.Key.create("transit.stream.reset");

  /** gRPC's new-connection hook: hands the connection being read its {@link Reset}. */
  static final ServerTransportFilter FILTER = new ServerTransportFilter() {
    @Override
    public Attributes transportReady(Attributes attributes) {
      StreamBound reading = READING.get();
      if (reading == null) {
        return attributes;
      }
      reading.handedOver = true;
      return attributes.toBuilder().set(RESET, reading::resetStreams).build();
    }
  };

  /** Resets a connection's open streams, as a stream error of its own would. */
  @FunctionalInterface
  public interface Reset {
    /** Posts the reset to the connection's event loop; {@code why} goes to gRPC's debug log. */
    void resetStreams(String why);
  }

  // The connection whose bytes this thread is passing to gRPC now (its event loop): what the
  // filter, called inside that, attaches its Reset to.
  private static final ThreadLocal<StreamBound> READING = new ThreadLocal<>();

  // Event loop only.
  private Channel channel;
  private boolean bounded;
  private boolean handedOver;

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    channel = ctx.channel();
    if (!bounded) {
      Http2ConnectionHandler http2 = ctx.pipeline().get(Http2ConnectionHandler.class);
      if (http2 != null) {
        http2.connection().remote().maxActiveStreams(MAX_STREAMS);
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

  private void resetStreams(String why) {
    Channel c = channel;
    c.eventLoop().execute(() -> {
      Http2ConnectionHandler http2 = c.pipeline().get(Http2ConnectionHandler.class);
      if (http2 == null) {
        return; // the connection is gone, and its streams with it
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
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (msg instanceof Channel child) {
        // Before the acceptor registers the connection: the handler is added with it.
        child.pipeline().addFirst(new StreamBound());
      }
      ctx.fireChannelRead(msg);
    }
  }
}
