package io.transit.flight.server.ops;

import io.grpc.netty.shaded.io.netty.bootstrap.ServerBootstrap;
import io.grpc.netty.shaded.io.netty.buffer.Unpooled;
import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelFuture;
import io.grpc.netty.shaded.io.netty.channel.ChannelFutureListener;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInitializer;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.SimpleChannelInboundHandler;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.SocketChannel;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.grpc.netty.shaded.io.netty.handler.codec.http.FullHttpRequest;
import io.grpc.netty.shaded.io.netty.handler.codec.http.FullHttpResponse;
import io.grpc.netty.shaded.io.netty.handler.codec.http.HttpHeaderNames;
import io.grpc.netty.shaded.io.netty.handler.codec.http.HttpHeaderValues;
import io.grpc.netty.shaded.io.netty.handler.codec.http.HttpMethod;
import io.grpc.netty.shaded.io.netty.handler.codec.http.HttpObjectAggregator;
import io.grpc.netty.shaded.io.netty.handler.codec.http.HttpResponseStatus;
import io.grpc.netty.shaded.io.netty.handler.codec.http.HttpServerCodec;
import io.grpc.netty.shaded.io.netty.handler.codec.http.HttpVersion;
import io.grpc.netty.shaded.io.netty.handler.codec.http.QueryStringDecoder;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.grpc.netty.shaded.io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Serves {@code GET /metrics} (the Prometheus text exposition) on one non-blocking event loop
 * thread, {@code transit-metrics}. No connection can hold that thread: a request is read as its
 * bytes arrive, and every connection is closed {@value #EXCHANGE_SECONDS} s after it was accepted
 * whatever it did, so one that never finishes its request (or never reads its answer) costs only
 * its socket, for that long. At most {@value #MAX_CONNECTIONS} connections are open; a new one
 * beyond them is closed at once. Each connection gets one answer, which closes it.
 *
 * <p>Why not the JDK's {@code HttpServer}, which this replaced: it reads a request on an executor
 * thread with no time bound, so one connection that sent half a request stopped every scrape
 * after it, for good.
 *
 * <p>Threads: {@link #start} and {@link #close} run on the daemon's main or shutdown thread; all
 * else, the scrape included, on the event loop. The response body is an unpooled heap buffer
 * that Netty releases once written.
 */
final class MetricsListener implements AutoCloseable {
  static final int EXCHANGE_SECONDS = 5;
  static final int MAX_CONNECTIONS = 256;
  /** Request line and headers: a scraper's are a few hundred bytes. */
  private static final int MAX_HEAD_BYTES = 8192;

  private final Supplier<String> exposition;
  // Started on the main thread; closed there or on the shutdown hook (after addShutdownHook's
  // happens-before edge).
  private NioEventLoopGroup loop;
  private Channel server;
  private int open; // the event loop's only

  MetricsListener(Supplier<String> exposition) {
    this.exposition = exposition;
  }

  /** Binds {@code host:port} (0 picks one); returns the bound port. */
  int start(String host, int port) throws IOException {
    loop = new NioEventLoopGroup(1, new DefaultThreadFactory("transit-metrics", true));
    ChannelFuture bound = new ServerBootstrap().group(loop).channel(NioServerSocketChannel.class)
        .option(ChannelOption.SO_BACKLOG, 16)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            if (open >= MAX_CONNECTIONS) {
              ch.close();
              return;
            }
            open++;
            ScheduledFuture<?> deadline =
                ch.eventLoop().schedule(() -> ch.close(), EXCHANGE_SECONDS, TimeUnit.SECONDS);
            ch.closeFuture().addListener(f -> {
              open--;
              deadline.cancel(false);
            });
            ch.pipeline().addLast(new HttpServerCodec(4096, MAX_HEAD_BYTES, 8192),
                new HttpObjectAggregator(MAX_HEAD_BYTES), new Exchange());
          }
        })
        .bind(new InetSocketAddress(host, port)).awaitUninterruptibly();
    if (!bound.isSuccess()) {
      close();
      throw new IOException("metrics listener: cannot bind " + host + ":" + port + ": "
          + bound.cause().getMessage(), bound.cause());
    }
    server = bound.channel();
    return ((InetSocketAddress) server.localAddress()).getPort();
  }

  @Override
  public void close() {
    if (loop == null) {
      return;
    }
    if (server != null) {
      server.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
    loop.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    loop = null;
  }

  /**
   * One request on one connection, then the answer and the close. The event loop. Requests a
   * client pipelined behind the first are dropped unanswered (released by the handler) and
   * reading stops: each would cost a scrape and hold its answer in the outbound buffer until a
   * client that never reads is closed by the deadline.
   */
  private final class Exchange extends SimpleChannelInboundHandler<FullHttpRequest> {
    private boolean answered; // the event loop's only

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
      if (answered) {
        return;
      }
      answered = true;
      ctx.channel().config().setAutoRead(false);
      FullHttpResponse answer;
      if (!request.decoderResult().isSuccess()) {
        answer = text(HttpResponseStatus.BAD_REQUEST, "bad request\n");
      } else if (!"/metrics".equals(new QueryStringDecoder(request.uri()).path())) {
        answer = text(HttpResponseStatus.NOT_FOUND, "not found: the metrics are at /metrics\n");
      } else if (!request.method().equals(HttpMethod.GET)
          && !request.method().equals(HttpMethod.HEAD)) {
        answer = text(HttpResponseStatus.METHOD_NOT_ALLOWED, "GET /metrics\n");
        answer.headers().set(HttpHeaderNames.ALLOW, "GET, HEAD");
      } else {
        answer = text(HttpResponseStatus.OK, exposition.get());
        answer.headers().set(HttpHeaderNames.CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8");
        if (request.method().equals(HttpMethod.HEAD)) {
          answer.content().clear();
        }
      }
      answer.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      // A reset or an oversized head: the peer's connection ends, nothing else does.
      ctx.close();
    }
  }

  private static FullHttpResponse text(HttpResponseStatus status, String body) {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
        Unpooled.wrappedBuffer(bytes));
    r.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8");
    r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, bytes.length);
    return r;
  }
}
