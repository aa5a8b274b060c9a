package io.transit.flight.server.testing;

import io.transit.flight.server.GatewayHooks;
import io.transit.flight.nativequery.embedded.CommandFaults;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.server.config.ConfigException;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Test-only fault injection for the daemon's embedded engine, read from the environment variable
 * {@value #VARIABLE} and nowhere else (never from the configuration file). End-to-end tests use it
 * to make a native outcome unknown, to hold accepted queries back, to retire results or to break
 * the gateway's clock; an operator never sets it.
 *
 * <p>Grammar (comma-separated, no spaces):
 *
 * <pre>
 *   before-record:KIND:WHEN   fail the matching command before its journal record
 *   after-record:KIND:WHEN    fail the matching command after its record committed
 *   execution-delay-ms:N      every accepted query waits N ms (1..600000) before executing
 *   finish-delay-ms:N         every query waits N ms (1..600000) after executing, before its
 *                             terminal commit
 *   submit-delay-ms:N         every submit waits N ms (1..600000) before its journal record,
 *                             while its early run executes (docs/native-engine.md)
 *   release-after-execution   every result is released as soon as its query has executed
 *   clock:negative            the gateway's clock reads -1 ms (an invalid observation: CLOCK)
 *   clock:defect              the gateway's clock throws IllegalStateException (a defect: INTERNAL)
 *   engine-publications:none  the engine loads no publication, so every submit is rejected with
 *                             query.source_unavailable (PRECONDITION)
 *   KIND = begin | part | seal | submit | any      WHEN = once | always
 * </pre>
 *
 * <p>A value that does not parse refuses the start (exit 2), so a typo can never run a daemon
 * with half of the intended faults; an empty or absent variable means no faults at all.
 *
 * <p>Threads: built once at start; {@link #fail} runs on the sending gRPC threads (an {@code
 * once} rule fires for exactly one command, decided by an {@link AtomicBoolean}).
 */
public final class TestFaults implements GatewayHooks, CommandFaults {
  public static final String VARIABLE = "TRANSIT_TEST_FAULTS";
  private static final long MAX_DELAY_MS = 600_000;

  private record Rule(Point point, NativeCommand.BodyCase kind, AtomicBoolean spent) {
    boolean matches(Point p, NativeCommand c) {
      return p == point && (kind == null || kind == c.getBodyCase());
    }
  }

  private final String spec;
  private final List<Rule> rules;
  private final long delayMillis;
  private final long finishDelayMillis;
  private final long submitDelayMillis;
  private final boolean release;
  /** "negative", "defect" or null (the system clock). */
  private final String clockFault;
  private final boolean unpublished;

  private TestFaults(String spec, List<Rule> rules, long delayMillis, long finishDelayMillis,
      long submitDelayMillis, boolean release, String clockFault, boolean unpublished) {
    this.spec = spec;
    this.rules = List.copyOf(rules);
    this.delayMillis = delayMillis;
    this.finishDelayMillis = finishDelayMillis;
    this.submitDelayMillis = submitDelayMillis;
    this.release = release;
    this.clockFault = clockFault;
    this.unpublished = unpublished;
  }

  /** The faults named by {@value #VARIABLE} in {@code env}, or empty when it is unset or empty. */
  public static Optional<TestFaults> fromEnvironment(Map<String, String> env)
      throws ConfigException {
    String spec = env.get(VARIABLE);
    if (spec == null || spec.isEmpty()) {
      return Optional.empty();
    }
    List<Rule> rules = new ArrayList<>();
    long delay = 0;
    long finishDelay = 0;
    long submitDelay = 0;
    boolean release = false;
    String clock = null;
    boolean unpublished = false;
    for (String item : spec.split(",", -1)) {
      String[] f = item.split(":", -1);
      if (f.length == 2 && f[0].equals("execution-delay-ms")) {
        delay = delayOf(f[0], f[1]);
      } else if (f.length == 2 && f[0].equals("finish-delay-ms")) {
        finishDelay = delayOf(f[0], f[1]);
      } else if (f.length == 2 && f[0].equals("submit-delay-ms")) {
        submitDelay = delayOf(f[0], f[1]);
      } else if (f.length == 1 && f[0].equals("release-after-execution")) {
        release = true;
      } else if (f.length == 2 && f[0].equals("clock")
          && (f[1].equals("negative") || f[1].equals("defect"))) {
        clock = f[1];
      } else if (item.equals("engine-publications:none")) {
        unpublished = true;
      } else if (f.length == 3 && (f[0].equals("before-record") || f[0].equals("after-record"))) {
        Point point = f[0].startsWith("before") ? Point.BEFORE_RECORD : Point.AFTER_RECORD;
        rules.add(new Rule(point, kindOf(f[1]), whenOf(f[2])));
      } else {
        throw refused("'" + item + "' is not a fault");
      }
    }
    return Optional.of(
        new TestFaults(spec, rules, delay, finishDelay, submitDelay, release, clock,
            unpublished));
  }

  private static NativeCommand.BodyCase kindOf(String s) throws ConfigException {
    return switch (s) {
      case "any" -> null;
      case "begin", "part", "seal", "submit" ->
          NativeCommand.BodyCase.valueOf(s.toUpperCase(Locale.ROOT));
      default -> throw refused("unknown command kind '" + s + "'");
    };
  }

  /** {@code once}: an unspent flag; {@code always}: null (never spent). */
  private static AtomicBoolean whenOf(String s) throws ConfigException {
    return switch (s) {
      case "once" -> new AtomicBoolean();
      case "always" -> null;
      default -> throw refused("'" + s + "' is neither once nor always");
    };
  }

  private static long delayOf(String item, String s) throws ConfigException {
    try {
      long ms = Long.parseLong(s);
      if (ms >= 1 && ms <= MAX_DELAY_MS) {
        return ms;
      }
    } catch (NumberFormatException e) {
      // Falls through to the refusal below.
    }
    throw refused(item + " must be 1.." + MAX_DELAY_MS);
  }

  private static ConfigException refused(String why) {
    return new ConfigException(VARIABLE + ": " + why);
  }

  @Override
  public boolean fail(Point point, NativeCommand command) {
    for (Rule r : rules) {
      if (r.matches(point, command) && (r.spent() == null || r.spent().compareAndSet(false, true))) {
        return true;
      }
    }
    return false;
  }

  @Override
  public long executionDelayMillis() {
    return delayMillis;
  }

  @Override
  public long finishDelayMillis() {
    return finishDelayMillis;
  }

  @Override
  public long submitDelayMillis() {
    return submitDelayMillis;
  }

  @Override
  public boolean releaseAfterExecution() {
    return release;
  }

  @Override
  public CommandFaults engineFaults() {
    return this;
  }

  @Override
  public boolean enginePublicationsNone() {
    return unpublished;
  }

  /** The clock the gateway uses for ticket expiry: {@code base} unless a clock fault is named. */
  @Override
  public Clock clock(Clock base) {
    return clockFault == null ? base : new FaultyClock(clockFault.equals("defect"));
  }

  /** A clock that reads -1 ms, or throws as a defect would; every thread may call it. */
  private static final class FaultyClock extends Clock {
    private final boolean defect;

    FaultyClock(boolean defect) {
      this.defect = defect;
    }

    @Override
    public long millis() {
      if (defect) {
        throw new IllegalStateException("injected clock defect (" + VARIABLE + ")");
      }
      return -1;
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis());
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }
  }

  /** As the start-up warning names it: the variable and its value. */
  @Override
  public String toString() {
    return VARIABLE + "=" + spec;
  }
}
