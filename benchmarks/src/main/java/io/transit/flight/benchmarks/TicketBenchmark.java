package io.transit.flight.benchmarks;

import io.transit.flight.crypto.Ed25519;
import io.transit.flight.ticket.StatementReference;
import io.transit.flight.ticket.TicketScope;
import io.transit.flight.ticket.TicketService;
import io.transit.flight.ticket.TransitDefinition;
import io.transit.flight.ticket.VerifiedTicket;
import java.time.Clock;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * FTK1 statement tickets: issue (encode + Ed25519 sign); verify at the issuer (parse, the
 * signature recognised, scope: docs/tickets.md, check 4) and at another replica sharing the key
 * (parse, Ed25519 verify, scope).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class TicketBenchmark {
  private TicketService service;
  private TicketScope scope;
  private byte[] declaration;
  private StatementReference reference;
  private long expiry;
  private byte[] ticket;
  private TicketService replica;

  @Setup(Level.Trial)
  public void setUp() {
    service = new TicketService(Ed25519.fromSeed(Fixtures.seed(9)),
        TransitDefinition.of("bench", 1, Fixtures.SERVICE), Clock.systemUTC());
    scope = new TicketScope(1, Fixtures.PRINCIPAL, Fixtures.SERVICE, 1, 1, Fixtures.PRINCIPAL,
        901, 9001, false, 0);
    declaration = new byte[32];
    Arrays.fill(declaration, (byte) 0xD0);
    byte[] manifest = new byte[32];
    Arrays.fill(manifest, (byte) 0xA0);
    reference = new StatementReference(42, manifest);
    expiry = System.currentTimeMillis() + TimeUnit.DAYS.toMillis(1);
    // A serving gateway's memory of issued tickets is full; the one presented is among the newest.
    for (int i = 1; i < 1024; i++) {
      service.issue(scope, declaration, expiry + i, reference);
    }
    ticket = issue();
    replica = new TicketService(Ed25519.fromSeed(Fixtures.seed(9)),
        TransitDefinition.of("bench", 1, Fixtures.SERVICE), Clock.systemUTC());
  }

  @Benchmark
  public byte[] issue() {
    return service.issue(scope, declaration, expiry, reference);
  }

  @Benchmark
  public VerifiedTicket verify() {
    return service.verify(ticket, scope, declaration);
  }

  @Benchmark
  public VerifiedTicket verifyAtReplica() {
    return replica.verify(ticket, scope, declaration);
  }
}
