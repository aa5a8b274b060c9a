package io.transit.flight.server.transport;

import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Error;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Exception;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Flags;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2FrameListener;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2FrameListenerDecorator;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Settings;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Stream;
import io.grpc.netty.shaded.io.netty.util.ReferenceCountUtil;
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
 *       (which gRPC clients do not send);
 *   <li>empty CONTINUATION frames, which Netty's reader joins into their header block without
 *       reporting them: a block that never ends, sent as empty CONTINUATION frames, grows nothing
 *       and kept a network thread busy (280 million frames in 12 s on one connection; a
 *       non-empty one grows the block, which the header list bound ends). A {@link
 *       ContinuationScan} reads them from the connection's bytes ahead of gRPC's handler, which
 *       it can do from the first byte only: on plaintext and Unix-socket connections. Over the
 *       daemon's own TLS the handshake's last read may already carry frames, so there the
 *       CONTINUATION frames are not counted (a TLS edge in front re-frames what it forwards).
 * </ul>
 *
 * <p>Past the bound the connection gets GOAWAY {@code ENHANCE_YOUR_CALM} and is closed, as past
 * gRPC's reset bound.
 *
 * <p>Threads: the connection's event loop only — {@link #install} (from {@link StreamBound}'s
 * first read with gRPC's handler in place), the decoder's frame callbacks, the connection's
 * stream-closed callbacks and the scan's reads all run there; the count of connections it
 * closed (the listener's, {@link Listeners#closedForFrames}) is read by any thread.
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
   * on the connection's stream-closed callbacks; with {@code fromFirstByte} (no byte has reached
   * {@code http2} yet, and none will be encrypted past it), a {@link ContinuationScan} ahead of
   * it.
   */
  static void install(Http2ConnectionHandler http2, ChannelHandlerContext at, int max,
      long windowMs, AtomicLong closedConnections, boolean fromFirstByte) {
    FrameBudget budget = new FrameBudget(http2.decoder().frameListener(), http2, at, max,
        windowMs * 1_000_000L, closedConnections);
    http2.decoder().frameListener(budget);
    if (fromFirstByte) {
      at.pipeline().addBefore(at.name(), "transit-continuation-scan",
          budget.new ContinuationScan());
    }
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

  /**
   * A charge outside the decoder (a stream-closed callback, the scan): the error is raised here.
   * True once over the bound.
   */
  private boolean spendOrClose() {
    if (charge()) {
      http2.onError(at, false, exhausted());
      return true;
    }
    return false;
  }

  /**
   * Finds the frame headers in the bytes on their way to gRPC's HTTP/2 handler (the client
   * preface first), and charges each empty CONTINUATION frame; consumes nothing, copies nothing.
   * Once the budget is over, drops what arrives (the connection is closing).
   *
   * <p>Threads: the connection's event loop.
   */
  final class ContinuationScan extends ChannelInboundHandlerAdapter {
    private static final int PREFACE_BYTES = 24;
    private static final int HEADER_BYTES = 9;
    private static final byte CONTINUATION = 0x9;

    private final byte[] header = new byte[HEADER_BYTES];
    private int prefaceLeft = PREFACE_BYTES;
    private int headerHave;
    private long payloadLeft;

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (over) {
        ReferenceCountUtil.release(msg);
        return;
      }
      if (msg instanceof ByteBuf bytes && scan(bytes)) {
        ReferenceCountUtil.release(msg);
        return;
      }
      ctx.fireChannelRead(msg);
    }

    /** True once a CONTINUATION frame passed the budget. */
    private boolean scan(ByteBuf b) {
      int i = b.readerIndex();
      int end = b.writerIndex();
      while (i < end) {
        if (prefaceLeft > 0) {
          int n = Math.min(prefaceLeft, end - i);
          prefaceLeft -= n;
          i += n;
        } else if (payloadLeft > 0) {
          int n = (int) Math.min(payloadLeft, end - i);
          payloadLeft -= n;
          i += n;
        } else {
          header[headerHave++] = b.getByte(i++);
          if (headerHave == HEADER_BYTES) {
            headerHave = 0;
            payloadLeft = (header[0] & 0xFFL) << 16 | (header[1] & 0xFFL) << 8 | header[2] & 0xFFL;
            // Only empty ones: each byte of a non-empty one grows a block the header list bound
            // ends, and a legitimately large block (a raised metadata bound) needs several.
            if (header[3] == CONTINUATION && payloadLeft == 0 && spendOrClose()) {
              return true;
            }
          }
        }
      }
      return false;
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
