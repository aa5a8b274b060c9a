package io.transit.flight.crypto;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.apache.arrow.memory.ArrowBuf;

/** SHA-256 helpers, including the domain-separated form every signature in the project uses. */
public final class Digests {
  private Digests() {}

  public static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  public static byte[] sha256(byte[] bytes) {
    return sha256().digest(bytes);
  }

  /**
   * SHA-256 of {@code buf[0, length)}, read in place from off-heap memory (no heap copy of the
   * whole buffer).
   */
  public static byte[] sha256(ArrowBuf buf, long length) {
    if (length < 0 || length > buf.capacity() || length > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("length " + length + " of a " + buf.capacity()
          + "-byte buffer");
    }
    MessageDigest md = sha256();
    md.update(buf.nioBuffer(0, (int) length));
    return md.digest();
  }

  /** SHA-256(domain ‖ 0x00 ‖ bytes): the message each Ed25519 signature here covers. */
  public static byte[] domainSha256(String domain, byte[] bytes) {
    MessageDigest md = sha256();
    md.update(domain.getBytes(StandardCharsets.US_ASCII));
    md.update((byte) 0);
    md.update(bytes);
    return md.digest();
  }

  public static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }
}
