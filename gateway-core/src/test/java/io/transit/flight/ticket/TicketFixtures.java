package io.transit.flight.ticket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.function.Consumer;

/** Fixed keys, definitions, scopes and digests shared by the ticket tests. */
final class TicketFixtures {
  static final long REALM = 0x0102030405060708L;
  static final long SERVICE = 0x1112131415161718L;
  static final long EXPIRY = 1_750_000_000_000L;

  private TicketFixtures() {}

  static byte[] seed(int first) {
    byte[] seed = new byte[32];
    for (int i = 0; i < seed.length; i++) {
      seed[i] = (byte) (first + i);
    }
    return seed;
  }

  static Ed25519.KeyPair key() {
    return Ed25519.fromSeed(seed(0));
  }

  static TransitDefinition definition() {
    return TransitDefinition.of("demo-realm", REALM, SERVICE);
  }

  static Clock clockAt(long millis) {
    return Clock.fixed(Instant.ofEpochMilli(millis), ZoneOffset.UTC);
  }

  static TicketService service() {
    return new TicketService(key(), definition(), clockAt(EXPIRY - 1));
  }

  /** Every field distinct so a misplaced field shows up in the golden test. */
  static TicketScope scope() {
    return new TicketScope(
        REALM,
        0x2122232425262728L,
        SERVICE,
        0x3132333435363738L,
        0x4142434445464748L,
        0x5152535455565758L,
        0x6162636465666768L,
        0x7172737475767778L,
        true,
        0x8182838485868788L);
  }

  static byte[] filled(int value) {
    byte[] bytes = new byte[32];
    Arrays.fill(bytes, (byte) value);
    return bytes;
  }

  static byte[] declaration() {
    return filled(0xD0);
  }

  static StatementReference statement() {
    return new StatementReference(0x9192939495969798L, filled(0xA0));
  }

  static MetadataReference metadata(int commandBytes) {
    byte[] command = new byte[commandBytes];
    for (int i = 0; i < command.length; i++) {
      command[i] = (byte) (i * 7 + 3);
    }
    return new MetadataReference(command, filled(0xB0));
  }

  static long u64(byte[] bytes, int offset) {
    return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong(offset);
  }

  /** Applies {@code edit} to a copy of {@code ticket}, then re-signs it with {@code key}. */
  static byte[] resigned(byte[] ticket, Ed25519.KeyPair key, Consumer<byte[]> edit) {
    byte[] copy = ticket.clone();
    edit.accept(copy);
    int signed = copy.length - Ed25519.SIGNATURE_BYTES;
    byte[] digest =
        Digests.domainSha256(TicketService.SIGNATURE_DOMAIN, Arrays.copyOf(copy, signed));
    System.arraycopy(key.sign(digest), 0, copy, signed, Ed25519.SIGNATURE_BYTES);
    return copy;
  }

  static GatewayException rejects(
      TicketService service, byte[] ticket, TicketScope scope, Cause cause, String code) {
    GatewayException e =
        assertThrows(GatewayException.class, () -> service.verify(ticket, scope, declaration()));
    assertEquals(cause, e.kind(), e.getMessage());
    assertEquals(code, e.code(), e.getMessage());
    assertPrintableAscii(e.getMessage());
    return e;
  }

  static void assertPrintableAscii(String message) {
    assertEquals(
        true,
        message.length() <= 128 && message.chars().allMatch(c -> c >= 0x20 && c < 0x7f),
        message);
  }
}
