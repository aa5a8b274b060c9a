package io.transit.flight.ticket;

import static io.transit.flight.ticket.TicketFixtures.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Property: no mutation of a valid ticket verifies unless it is byte-equal to a valid ticket,
 * and every refusal is a {@link GatewayException} of the ticket family (never another
 * exception). Mutations: bit flips, byte substitutions, truncations, extensions, splices of two
 * tickets, random bytes of random length (including oversize), and edits re-signed with the
 * right key that break the layout or change a bound field, which must fail with the exact code.
 *
 * <p>{@code -Dticket.fuzz.cases} sets the case count (default 50,000; the {@code stress} Maven
 * profile runs 1,000,000) and {@code -Dticket.fuzz.seed} the seed. Case {@code i} draws from
 * its own generator seeded by (seed, i), so a failure is reproducible from its index alone, and
 * the cases run on the common fork-join pool in any order.
 */
class TicketFuzzTest {
  private static final Set<Cause> TICKET_FAMILY =
      Set.of(Cause.INVALID_TICKET, Cause.TICKET_EXPIRED, Cause.TICKET_SCOPE);
  private static final int MUTATIONS = 8;

  private final TicketService service = service();
  private final List<byte[]> pool = new ArrayList<>();
  private final Set<ByteBuffer> valid = new HashSet<>();

  private final LongAdder unchanged = new LongAdder();
  private final LongAdder accepted = new LongAdder();
  private final LongAdder unexpected = new LongAdder();
  private final LongAdder wrongCode = new LongAdder();
  private final Map<String, LongAdder> codes = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<String> examples = new ConcurrentLinkedQueue<>();

  @Test
  void mutatedTicketsAreNeverAcceptedAndAlwaysRefusedCleanly() {
    int cases = Integer.getInteger("ticket.fuzz.cases", 50_000);
    long seed = Long.getLong("ticket.fuzz.seed", 0x46544b31L);
    for (TicketReference ref :
        List.of(statement(), metadata(0), metadata(1), metadata(37), metadata(300),
            metadata(Ftk1Layout.MAX_METADATA_COMMAND_BYTES))) {
      byte[] ticket = service.issue(scope(), declaration(), EXPIRY, ref);
      pool.add(ticket);
      valid.add(ByteBuffer.wrap(ticket));
    }

    long started = System.nanoTime();
    IntStream.range(0, cases).parallel().forEach(i -> runCase(seed, i));
    long millis = (System.nanoTime() - started) / 1_000_000;

    System.out.printf(
        "ticket fuzz: %d cases in %d ms, seed %d: %d accepted, %d equal to a valid ticket,"
            + " %d unexpected exceptions, %d wrong codes; refusals %s%n",
        cases, millis, seed, accepted.sum(), unchanged.sum(), unexpected.sum(), wrongCode.sum(),
        new TreeMap<>(codes));
    assertEquals(0, accepted.sum(), "accepted forgeries, e.g. " + examples);
    assertEquals(0, unexpected.sum(), "unexpected exceptions, e.g. " + examples);
    assertEquals(0, wrongCode.sum(), "re-signed mutations with the wrong code, e.g. " + examples);
    long refused = codes.values().stream().mapToLong(LongAdder::sum).sum();
    assertEquals(cases, refused + unchanged.sum());
    assertTrue(refused > cases * 0.9, "most mutations must change the ticket: " + refused);
  }

  private void runCase(long seed, int index) {
    SplittableRandom rnd = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + index);
    byte[] base = pool.get(rnd.nextInt(pool.size()));
    int kind = rnd.nextInt(MUTATIONS);
    Mutation m = mutate(kind, base, rnd);
    try {
      service.verify(m.ticket, scope(), declaration());
      if (valid.contains(ByteBuffer.wrap(m.ticket))) {
        unchanged.increment();
      } else {
        accepted.increment();
        note(index, m, "accepted");
      }
    } catch (GatewayException e) {
      if (!TICKET_FAMILY.contains(e.kind())) {
        unexpected.increment();
        note(index, m, e.kind() + " " + e.code());
        return;
      }
      codes.computeIfAbsent(e.code(), k -> new LongAdder()).increment();
      if (m.expected != null && !m.expected.contains(e.code())) {
        wrongCode.increment();
        note(index, m, e.code() + " not in " + m.expected);
      }
    } catch (RuntimeException | Error e) {
      unexpected.increment();
      note(index, m, e.toString());
    }
  }

  private void note(int index, Mutation m, String what) {
    if (examples.size() < 5) {
      examples.add("case " + index + " (" + m.name + ", " + m.ticket.length + " bytes): " + what);
    }
  }

  /** A mutated ticket and, for re-signed edits, the codes it may fail with (else any). */
  private record Mutation(String name, byte[] ticket, Set<String> expected) {}

  private Mutation mutate(int kind, byte[] base, SplittableRandom rnd) {
    switch (kind) {
      case 0: {
        byte[] t = base.clone();
        for (int flips = 1 + rnd.nextInt(3); flips > 0; flips--) {
          t[rnd.nextInt(t.length)] ^= (byte) (1 << rnd.nextInt(8));
        }
        return new Mutation("bit flips", t, null);
      }
      case 1: {
        byte[] t = base.clone();
        for (int subs = 1 + rnd.nextInt(4); subs > 0; subs--) {
          t[rnd.nextInt(t.length)] = (byte) rnd.nextInt(256);
        }
        return new Mutation("byte substitutions", t, null);
      }
      case 2:
        return new Mutation("truncation", Arrays.copyOf(base, rnd.nextInt(base.length)), null);
      case 3: {
        // Up to past the maximum size, so oversize extensions are common for large tickets.
        byte[] t = Arrays.copyOf(base, base.length + 1 + rnd.nextInt(1100));
        for (int i = base.length; i < t.length; i++) {
          t[i] = (byte) rnd.nextInt(256);
        }
        return new Mutation("extension", t, null);
      }
      case 4: {
        byte[] other = pool.get(rnd.nextInt(pool.size()));
        int cutA = rnd.nextInt(base.length + 1);
        int cutB = rnd.nextInt(other.length + 1);
        byte[] t = Arrays.copyOf(base, cutA + other.length - cutB);
        System.arraycopy(other, cutB, t, cutA, other.length - cutB);
        return new Mutation("splice", t, null);
      }
      case 5: {
        byte[] t = new byte[rnd.nextInt(1400)];
        for (int i = 0; i < t.length; i++) {
          t[i] = (byte) rnd.nextInt(256);
        }
        // Half keep the real definition so the bytes reach the signature check.
        if (rnd.nextBoolean() && t.length >= 32) {
          System.arraycopy(base, 0, t, 0, 32);
        }
        return new Mutation("random bytes", t, null);
      }
      case 6: {
        // Lengths at and around the bounds, far beyond them, over a real ticket's bytes.
        int[] edges = {0, 1, 243, 244, 245, 249, 250, 251, 1262, 1263, 1264, 1265, 4096, 65536};
        int length = rnd.nextBoolean() ? edges[rnd.nextInt(edges.length)] : rnd.nextInt(70_000);
        byte[] t = Arrays.copyOf(base, length);
        for (int i = base.length; i < t.length; i++) {
          t[i] = (byte) rnd.nextInt(256);
        }
        return new Mutation("random length", t, null);
      }
      default:
        // Signing is the costly step, so re-signed edits get one slot of eight.
        return rnd.nextBoolean() ? resignedLayoutBreak(base, rnd) : resignedFieldChange(base, rnd);
    }
  }

  /** Re-signed with the ticket key, so only the layout (or size) can refuse it. */
  private static Mutation resignedLayoutBreak(byte[] base, SplittableRandom rnd) {
    Set<String> layout = Set.of("ticket.layout");
    switch (rnd.nextInt(5)) {
      case 0: {
        int tag = 3 + rnd.nextInt(254);
        return new Mutation("re-signed tag", resigned(base, key(), t -> t[145] = (byte) (tag & 0xff)),
            layout);
      }
      case 1: {
        int flag = 2 + rnd.nextInt(254);
        return new Mutation("re-signed role flag", resigned(base, key(), t -> t[96] = (byte) flag),
            layout);
      }
      case 2:
        // Every pool ticket selects a role: clearing the flag leaves a role id without one.
        return new Mutation("re-signed role id without flag", resigned(base, key(), t -> t[96] = 0),
            layout);
      case 3: {
        if (base[145] != MetadataReference.TAG) {
          return new Mutation("re-signed statement as metadata",
              resigned(base, key(), t -> t[145] = MetadataReference.TAG), layout);
        }
        int actual = base.length - Ftk1Layout.METADATA_TICKET_BASE_BYTES;
        int claimed = rnd.nextInt(65536);
        if (claimed == actual) {
          claimed = actual + 1;
        }
        int n = claimed;
        return new Mutation("re-signed command length", resigned(base, key(), t -> ByteBuffer
            .wrap(t).order(ByteOrder.LITTLE_ENDIAN).putShort(146, (short) n)), layout);
      }
      default: {
        // Change the length, then sign whatever the last 64 bytes now follow.
        int length = 64 + rnd.nextInt(1400 - 64);
        if (length == base.length) {
          length++;
        }
        byte[] t = Arrays.copyOf(base, length);
        boolean fits = length >= Ftk1Layout.MIN_TICKET_BYTES && length <= Ftk1Layout.MAX_TICKET_BYTES;
        return new Mutation("re-signed at another length", resigned(t, key(), x -> {}),
            fits ? layout : Set.of("ticket.size"));
      }
    }
  }

  /** Re-signed with the ticket key after changing one bound field: refused by that field. */
  private static Mutation resignedFieldChange(byte[] base, SplittableRandom rnd) {
    int region = rnd.nextInt(4);
    int delta = 1 + rnd.nextInt(255);
    switch (region) {
      case 0: {
        int at = rnd.nextInt(32);
        return new Mutation("re-signed definition",
            resigned(base, key(), t -> t[at] ^= (byte) delta), Set.of("ticket.definition"));
      }
      case 1: {
        // The eight scope fields, the flag and the role id: a flag other than 1 breaks the layout.
        int at = Ftk1Layout.SCOPE_OFFSET + rnd.nextInt(Ftk1Layout.DECLARATION_OFFSET - 32);
        return new Mutation("re-signed scope",
            resigned(base, key(), t -> t[at] ^= (byte) delta), Set.of("ticket.scope", "ticket.layout"));
      }
      case 2: {
        int at = Ftk1Layout.DECLARATION_OFFSET + rnd.nextInt(32);
        return new Mutation("re-signed declaration",
            resigned(base, key(), t -> t[at] ^= (byte) delta), Set.of("ticket.declaration"));
      }
      default: {
        // Any expiry at or before the verifying clock (EXPIRY - 1).
        long expiry = rnd.nextLong(EXPIRY);
        return new Mutation("re-signed earlier expiry", resigned(base, key(), t -> ByteBuffer
            .wrap(t).order(ByteOrder.LITTLE_ENDIAN).putLong(Ftk1Layout.EXPIRY_OFFSET, expiry)),
            Set.of("ticket.expired"));
      }
    }
  }
}
