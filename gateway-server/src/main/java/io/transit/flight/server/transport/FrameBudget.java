package io.transit.flight.server.transport;

import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Error;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Exception;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Flags;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2FrameListener;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2FrameListenerDecorator;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Settings;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Stream;
import java.util.concurrent.atomic.AtomicLong;

/**
 * HTTP/2 frames that cost the server work and carry no request, bounded per connection: the
 * frames a peer can send without limit, since neither flow control nor gRPC's own bounds count
 * them. gRPC bounds the resets a peer sends ({@code maxRstFramesPerWindow}) and the pings; this
 * counts, in the same window and against the same number ({@code max_rst_frames_per_window} per
 * {@code rst_frames_window_ms}):
 *
 * <ul>
 *   <li>streams the server resets (a frame that is a stream error — a zero window update, DATA
 *       after the stream's end, a header list over the bound — makes the server reset the
 *       stream: the peer spends one frame, the server a stream's setup and teardown; the
 *       "MadeYouReset" class);
 *   <li>DATA frames without bytes that do not end their stream (each still reaches gRPC's
 *       deframer, which keeps a buffer for it: 14 million of them in 10 s, without a credential,
 *       ended the daemon's heap on 2026-12-07, since they use no flow-control window);
 *   <li>SETTINGS frames (each answered with an ACK), PRIORITY frames and frames of unknown types
 *       (which gRPC clients do not send).
 * </ul>
 *
 * <p>Past the bound the connection gets GOAWAY {@code ENHANCE_YOUR_CALM} and is closed, as past
 * gRPC's reset bound. Not counted, because Netty's frame reader does not report them: empty
 * CONTINUATION frames of a header block that never ends (they grow nothing, and the block stays
 * bounded by {@code max_inbound_metadata_bytes}).
 *
 * <p>Threads: the connection's event loop only — {@link #install} (from {@link StreamBound}'s
 * first read with gRPC's handler in place), the decoder's frame callbacks and the connection's
 * stream-closed callbacks all run there; {@link #closed} is read by any.
 */
final class FrameBudget extends Http2FrameListenerDecorator {
  private final Http2ConnectionHandler http2;
  private final ChannelHandlerContext at; // the HTTP/2 handler's context
  private final int max;
  private final long windowNanos;
  private final AtomicLong closedConnections;

  // Event loop only.
  private long windowStart;
  private int spent;
  private boolean over;

  private FrameBudget(Http2FrameListener inner, Http2ConnectionHandler http2,
      ChannelHandlerContext at, int max, long windowNanos, AtomicLong closedConnections) {
    super(inner);
    this.http2 = http2;
    this.at = at;
    this.max = max;
    this.windowNanos = windowNanos;
    this.closedConnections = closedConnections;
    this.windowStart = System.nanoTime();
  }

  /**
   * Event loop: puts the budget between {@code http2}'s decoder and gRPC's frame listener, and
   * on the connection's stream-closed callbacks.
   */
  static void install(Http2ConnectionHandler http2, ChannelHandlerContext at, int max,
      long windowMs, AtomicLong closedConnections) {
    FrameBudget budget = new FrameBudget(http2.decoder().frameListener(), http2, at, max,
        windowMs * 1_000_000L, closedConnections);
    http2.decoder().frameListener(budget);
    http2.connection().addListener(new Http2ConnectionAdapter() {
      @Override
      public void onStreamClosed(Http2Stream stream) {
        if (stream.isResetSent()) {
          budget.spendOrClose();
        }
      }
    });
  }

  @Override
  public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
      boolean endOfStream) throws Http2Exception {
    if (!endOfStream && data.readableBytes() == 0 && padding == 0) {
      spend();
    }
    return super.onDataRead(ctx, streamId, data, padding, endOfStream);
  }

  @Override
  public void onSettingsRead(ChannelHandlerContext ctx, Http2Settings settings)
      throws Http2Exception {
    spend();
    super.onSettingsRead(ctx, settings);
  }

  @Override
  public void onPriorityRead(ChannelHandlerContext ctx, int streamId, int streamDependency,
      short weight, boolean exclusive) throws Http2Exception {
    spend();
    super.onPriorityRead(ctx, streamId, streamDependency, weight, exclusive);
  }

  @Override
  public void onUnknownFrame(ChannelHandlerContext ctx, byte frameType, int streamId,
      Http2Flags flags, ByteBuf payload) throws Http2Exception {
    spend();
    super.onUnknownFrame(ctx, frameType, streamId, flags, payload);
  }

  /** A frame callback's charge: past the bound, a connection error (the decoder sends GOAWAY). */
  private void spend() throws Http2Exception {
    if (charge()) {
      throw exhausted();
    }
  }

  /** A stream-closed callback's charge: not inside the decoder, so the error is raised here. */
  private void spendOrClose() {
    if (charge()) {
      http2.onError(at, false, exhausted());
    }
  }

  /** Counts one; true once the window's count passes the bound. */
  private boolean charge() {
    long now = System.nanoTime();
    if (now - windowStart >= windowNanos) {
      windowStart = now;
      spent = 0;
    }
    if (++spent <= max) {
      return false;
    }
    if (!over) {
      over = true;
      closedConnections.incrementAndGet();
    }
    return true;
  }

  private Http2Exception exhausted() {
    return Http2Exception.connectionError(Http2Error.ENHANCE_YOUR_CALM,
        "more than %d frames that carry no request, or streams reset, within %d ms", max,
        windowNanos / 1_000_000L);
  }
}
