package io.transit.flight.server.transport;

import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.Status;
import io.transit.flight.server.request.MalformedRequests;
import java.io.InputStream;

/**
 * A server call as an interceptor of this package meets it: transport attributes and nothing
 * else; it records the status it is closed with, if any. The test's thread only.
 */
final class InterceptedCall extends ServerCall<InputStream, InputStream> {
  private static final MethodDescriptor<InputStream, InputStream> METHOD =
      MethodDescriptor.<InputStream, InputStream>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName("test/call")
          .setRequestMarshaller(MalformedRequests.RAW)
          .setResponseMarshaller(MalformedRequests.RAW).build();
  private final Attributes attrs;
  private Status closed;

  InterceptedCall(Attributes attrs) {
    this.attrs = attrs;
  }

  /** The status the interceptor closed the call with, or null. */
  Status closed() {
    return closed;
  }

  @Override
  public void request(int numMessages) {}

  @Override
  public void sendHeaders(Metadata headers) {}

  @Override
  public void sendMessage(InputStream message) {}

  @Override
  public void close(Status status, Metadata trailers) {
    closed = status;
  }

  @Override
  public boolean isCancelled() {
    return false;
  }

  @Override
  public Attributes getAttributes() {
    return attrs;
  }

  @Override
  public MethodDescriptor<InputStream, InputStream> getMethodDescriptor() {
    return METHOD;
  }
}
