package io.transit.flight.admission;

import static io.transit.flight.admission.Fixtures.*;
import static org.junit.jupiter.api.Assertions.*;

import io.grpc.Status;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.SignedCommand;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import org.junit.jupiter.api.Test;

class CommandChainTest {
  private static final byte[] BUNDLE =
      CanonicalBundle.build(caller(), table(), budgets(), sql("SELECT COUNT(*) FROM trips")).bytes();

  @Test
  void sequencesAreConsecutiveAndNextSequenceFollowsSubmit() throws Exception {
    int partBytes = 50;
    CommandChain chain = CommandChain.derive(BUNDLE, PRINCIPAL, key(), 1000, partBytes);
    int parts = (BUNDLE.length + partBytes - 1) / partBytes;
    assertEquals(parts, chain.partCount());
    assertEquals(parts + 3, chain.commands().size());
    assertEquals(1000 + parts + 3, chain.nextSequence());
    ByteArrayOutputStream assembled = new ByteArrayOutputStream();
    for (int i = 0; i < chain.commands().size(); i++) {
      SignedCommand signed = chain.commands().get(i);
      NativeCommand c = NativeCommand.parseFrom(signed.getCommand());
      assertEquals(PRINCIPAL, c.getPrincipal());
      assertEquals(1000 + i, c.getSequence());
      assertEquals(chain.sequenceAt(i), c.getSequence());
      assertEquals(1000, c.getNamespace());
      assertTrue(key().publicKey().verify(
          NativeSignatures.commandMessage(signed.getCommand().toByteArray()),
          signed.getSignature().toByteArray()));
      NativeCommand.BodyCase expected =
          i == 0 ? NativeCommand.BodyCase.BEGIN
              : i <= parts ? NativeCommand.BodyCase.PART
              : i == parts + 1 ? NativeCommand.BodyCase.SEAL : NativeCommand.BodyCase.SUBMIT;
      assertEquals(expected, c.getBodyCase());
      if (c.hasPart()) {
        assertEquals(i - 1, c.getPart().getIndex());
        assertTrue(c.getPart().getData().size() <= partBytes);
        assembled.writeBytes(c.getPart().getData().toByteArray());
      }
    }
    assertArrayEquals(BUNDLE, assembled.toByteArray());
    NativeCommand begin = NativeCommand.parseFrom(chain.commands().get(0).getCommand());
    assertEquals(BUNDLE.length, begin.getBegin().getBundleBytes());
    assertEquals(parts, begin.getBegin().getPartCount());
    assertArrayEquals(Digests.sha256(BUNDLE), begin.getBegin().getBundleSha256().toByteArray());
  }

  @Test
  void defaultPartSizeGivesOnePartForASmallBundle() {
    CommandChain chain =
        CommandChain.derive(BUNDLE, PRINCIPAL, key(), 1, CommandChain.DEFAULT_PART_BYTES);
    assertEquals(1, chain.partCount());
    assertEquals(5, chain.nextSequence());
  }

  @Test
  void sameInputsGiveSameSignedCommands() {
    assertEquals(
        CommandChain.derive(BUNDLE, PRINCIPAL, key(), 7, 64),
        CommandChain.derive(BUNDLE.clone(), PRINCIPAL, key(), 7, 64));
  }

  @Test
  void sequencesAreUnsignedUpToTheLastU64() throws Exception {
    CommandChain probe = CommandChain.derive(BUNDLE, PRINCIPAL, key(), 0, 64);
    long count = probe.commands().size();
    long first = -1L - count; // 2^64 - 1 - count: the last first sequence that fits
    CommandChain chain = CommandChain.derive(BUNDLE, PRINCIPAL, key(), first, 64);
    assertEquals(-1L, chain.nextSequence());
    NativeCommand last =
        NativeCommand.parseFrom(chain.commands().get((int) count - 1).getCommand());
    assertEquals("18446744073709551614", Long.toUnsignedString(last.getSequence()));

    GatewayException e =
        assertThrows(
            GatewayException.class,
            () -> CommandChain.derive(BUNDLE, PRINCIPAL, key(), first + 1, 64));
    assertEquals(Status.Code.INVALID_ARGUMENT, e.kind().code());
    assertEquals("admission.sequence_overflow", e.code());
    assertEquals(
        new BigInteger("18446744073709551615").subtract(BigInteger.valueOf(count - 1)),
        e.facts().get("first_sequence"));
    assertThrows(GatewayException.class, () -> CommandChain.derive(BUNDLE, PRINCIPAL, key(), -1L, 64));
  }

  @Test
  void partSizeIsBounded() {
    assertThrows(IllegalArgumentException.class,
        () -> CommandChain.derive(BUNDLE, PRINCIPAL, key(), 1, 0));
    assertThrows(IllegalArgumentException.class,
        () -> CommandChain.derive(BUNDLE, PRINCIPAL, key(), 1, CommandChain.MAX_PART_BYTES + 1));
  }

  @Test
  void concurrentSigningGivesTheSequentialChainByteForByte() {
    try (io.transit.flight.crypto.SignaturePool signers =
        io.transit.flight.crypto.SignaturePool.withHelpers(3)) {
      for (int partBytes : new int[] {7, 50, CommandChain.DEFAULT_PART_BYTES}) {
        CommandChain sequential = CommandChain.derive(BUNDLE, PRINCIPAL, key(), 77, partBytes);
        CommandChain concurrent =
            CommandChain.derive(BUNDLE, PRINCIPAL, key(), 77, partBytes, signers);
        assertEquals(sequential, concurrent, "part bytes " + partBytes);
      }
    }
  }
}
