package io.transit.flight.server.transport;

import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandler;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2ConnectionHandler;

/**
 * One open HTTP/2 stream per connection from the connection's first byte, not from the peer's
 * acknowledgement of the server's SETTINGS. gRPC advertises MAX_CONCURRENT_STREAMS 1 ({@code
 * maxConcurrentCallsPerConnection}), but Netty holds the peer to it only once the peer ACKs those
 * SETTINGS; a peer that never does, without any credential, could open streams without bound
 * until its connection's authentication budget ends it — about 2.6 KB of heap per 15-byte
 * HEADERS frame, enough to exhaust a 1 GiB heap from three connections in seconds (2026-12-06).
 * Until then a stream past the first is refused (RST_STREAM REFUSED_STREAM, which gRPC clients
 * retry by themselves), as the SETTINGS say it would be after the ACK.
 *
 * <p>Added first to each accepted connection's pipeline by {@link #INSTALLER}, which sits in the
 * listener's server channel. On each read until gRPC's HTTP/2 handler is in the pipeline it
 * looks for it, then sets the peer's limit on that handler's connection and removes itself.
 * Plaintext connections have the handler before their first read. Over TLS the handler arrives
 * with the handshake's end, possibly within a read that also carries the first frames: at most
 * that one read's streams (a read is at most 64 KiB) go unbounded.
 *
 * <p>Threads: the connection's event loop only ({@link #INSTALLER}: the listener's boss loop).
 */
final class StreamBound extends ChannelInboundHandlerAdapter {
  /** The most streams a peer may have open on one connection: the SETTINGS' own value. */
  static final int MAX_STREAMS = 1;

  /** For a listener's server channel: puts a {@link StreamBound} first in each connection. */
  static final ChannelHandler INSTALLER = new Installer();

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    Http2ConnectionHandler http2 = ctx.pipeline().get(Http2ConnectionHandler.class);
    if (http2 != null) {
      http2.connection().remote().maxActiveStreams(MAX_STREAMS);
      ctx.pipeline().remove(this);
    }
    ctx.fireChannelRead(msg);
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
