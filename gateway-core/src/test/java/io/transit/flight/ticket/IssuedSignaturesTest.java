package io.transit.flight.ticket;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.management.ThreadMXBean;
import java.lang.management.ManagementFactory;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The issued pairs' ring: exact matches only, the oldest forgotten, nothing allocated a pair. */
class IssuedSignaturesTest {
  private final Random random = new Random(19);

  @Test
  void onlyTheExactPairIsRecognised() {
    IssuedSignatures issued = new IssuedSignatures(8);
    byte[] digest = bytes(32);
    byte[] signature = bytes(64);
    issued.remember(digest, signature);
    assertTrue(issued.contains(digest, signature));
    for (int i = 0; i < 32; i++) {
      byte[] other = digest.clone();
      other[i] ^= 1;
      assertFalse(issued.contains(other, signature), "digest byte " + i);
    }
    for (int i = 0; i < 64; i++) {
      byte[] other = signature.clone();
      other[i] ^= (byte) 0x80;
      assertFalse(issued.contains(digest, other), "signature byte " + i);
    }
    assertFalse(issued.contains(new byte[32], new byte[64]), "zero pair");
    assertFalse(issued.contains(digest, new byte[63]), "short signature");
    assertFalse(issued.contains(new byte[31], signature), "short digest");
  }

  @Test
  void digestsSharingTheirFirstEightBytesAreToldApart() {
    IssuedSignatures issued = new IssuedSignatures(4);
    byte[] first = bytes(32);
    byte[] second = first.clone();
    second[31] ^= 1;
    byte[] signature = bytes(64);
    issued.remember(first, signature);
    assertFalse(issued.contains(second, signature));
    issued.remember(second, signature);
    assertTrue(issued.contains(first, signature));
    assertTrue(issued.contains(second, signature));
  }

  @Test
  void theOldestPairIsOverwrittenFirst() {
    IssuedSignatures issued = new IssuedSignatures(3);
    byte[][] digests = new byte[5][];
    byte[][] signatures = new byte[5][];
    for (int i = 0; i < 5; i++) {
      digests[i] = bytes(32);
      signatures[i] = bytes(64);
      issued.remember(digests[i], signatures[i]);
    }
    assertFalse(issued.contains(digests[0], signatures[0]));
    assertFalse(issued.contains(digests[1], signatures[1]));
    for (int i = 2; i < 5; i++) {
      assertTrue(issued.contains(digests[i], signatures[i]), "pair " + i);
    }
  }

  @Test
  void aPairOfAnyOtherLengthIsRefusedWhenRemembered() {
    IssuedSignatures issued = new IssuedSignatures(2);
    assertThrows(IllegalArgumentException.class, () -> issued.remember(new byte[31], bytes(64)));
    assertThrows(IllegalArgumentException.class, () -> issued.remember(bytes(32), new byte[65]));
    assertThrows(IllegalArgumentException.class, () -> new IssuedSignatures(0));
  }

  @Test
  void rememberingAndLookingUpAllocateNothing() {
    IssuedSignatures issued = new IssuedSignatures(TicketService.ISSUED_CAPACITY);
    byte[][] digests = new byte[64][];
    byte[][] signatures = new byte[64][];
    for (int i = 0; i < digests.length; i++) {
      digests[i] = bytes(32);
      signatures[i] = bytes(64);
    }
    ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
    long self = Thread.currentThread().getId();
    int rounds = 20_000;
    for (int warm = 0; warm < 2; warm++) {
      long before = threads.getThreadAllocatedBytes(self);
      for (int i = 0; i < rounds; i++) {
        int k = i % digests.length;
        issued.remember(digests[k], signatures[k]);
        if (!issued.contains(digests[k], signatures[k])) {
          throw new AssertionError("pair " + k + " not recognised");
        }
      }
      long allocated = threads.getThreadAllocatedBytes(self) - before;
      // The second round runs compiled code; the allowance covers the bean's own bookkeeping.
      if (warm == 1) {
        assertTrue(allocated < 4_096, allocated + " bytes allocated for " + rounds + " pairs");
      }
    }
  }

  private byte[] bytes(int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return b;
  }
}
