package io.transit.flight.server;

import static io.transit.flight.server.TestBindings.caller;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.server.auth.AuthSnapshot;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.Authorization.Right;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.ticket.MetadataReference;
import io.transit.flight.ticket.VerifiedTicket;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.nativequery.RightsLedger;
import io.transit.flight.nativequery.embedded.JournalRights;
import io.transit.flight.nativequery.embedded.SegmentSettings;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Authentication, grants and reload through the real configuration loader, state directory and
 * bindings: every grant comes from one snapshot, and a reload is one swap that the next recheck
 * honours.
 */
class AuthorizationReloadTest {
  private static final long NOW = 1_700_000_000_000L;

  @TempDir Path dir;
  private TestBindings t;
  /** Ledgers on the one journal file, one per replica; closed after each test. */
  private final List<JournalRights> ledgers = new ArrayList<>();
  /** What each replica's authorization handed its engine, newest last. */
  private final List<List<PrincipalRights>> engineRights = new ArrayList<>();

  @BeforeEach
  void prepare() throws Exception {
    t = new TestBindings(dir);
  }

  @AfterEach
  void closeLedgers() throws Exception {
    for (JournalRights l : ledgers) {
      l.close();
    }
  }

  /** A replica: its own connection to the one journal file, deciding at {@code nowMillis}. */
  private Authorization authorization(AuthSnapshot s, long nowMillis) throws Exception {
    JournalRights ledger = JournalRights.openEmbedded(dir.resolve("journal.sqlite"));
    ledgers.add(ledger);
    return new Authorization(s, ledger, r -> engineRights.add(List.copyOf(r)),
        Clock.fixed(Instant.ofEpochMilli(nowMillis), ZoneOffset.UTC));
  }

  /** A ticket verified under {@code grant}, as TicketService would return it. */
  private static VerifiedTicket ticketOf(Authorization.Grant grant, long expiry) {
    return new VerifiedTicket(grant.scope(), grant.caller().declarationFingerprint(), expiry,
        new MetadataReference(new byte[] {1}, new byte[32]));
  }

  @Test
  void oneGrantCarriesScopeReadAccessAndSubjectOfOneSnapshot() throws Exception {
    ResolvedConfig cfg = t.config(3, caller("a", 10, true));
    Authorization auth = authorization(t.snapshot(cfg), NOW);
    CallerBinding a = auth.authenticate(t.token("a")).orElseThrow();
    Authorization.Grant g = auth.current(a);
    assertEquals(10, g.scope().principal());
    assertEquals(3, g.scope().ingress());
    assertEquals(7, g.scope().service());
    assertEquals(9, g.readAccess().source());
    assertEquals(10, g.admissionSubject().principal());
    assertEquals(7, g.admissionSubject().serviceId());
    assertEquals(NOW + 60_000, auth.ticketExpiryMillis(g));
    assertTrue(auth.authenticate("not-a-credential").isEmpty());
  }

  @Test
  void reloadIsOneSwapThatTheNextRecheckHonours() throws Exception {
    ResolvedConfig first =
        t.config(3, caller("a", 10, true), caller("b", 11, true));
    Authorization auth = authorization(t.snapshot(first), NOW);
    CallerBinding a = auth.authenticate(t.token("a")).orElseThrow();
    CallerBinding b = auth.authenticate(t.token("b")).orElseThrow();
    VerifiedTicket ticketA = ticketOf(auth.current(a), NOW + 1);
    VerifiedTicket ticketB = ticketOf(auth.current(b), NOW + 1);
    assertEquals(a, auth.recheck(a, ticketA).caller());

    // A new ingress, caller b removed: built whole first, nothing changes until the install.
    AuthSnapshot next = t.next(first, t.config(4, caller("a", 10, true)));
    assertEquals(3, auth.current(a).scope().ingress());
    auth.install(next);
    assertSame(next, auth.current());
    assertEquals(4, auth.current(a).scope().ingress());
    assertEquals("access.binding_changed", code(() -> auth.recheck(a, ticketA)));
    assertEquals("access.binding_revoked", code(() -> auth.recheck(b, ticketB)));
    assertTrue(auth.authenticate(t.token("b")).isEmpty());
  }

  @Test
  void recheckRefusesARevokedReadRightAndAnExpiredTicket() throws Exception {
    ResolvedConfig first = t.config(3, caller("a", 10, true));
    Authorization auth = authorization(t.snapshot(first), NOW);
    CallerBinding a = auth.authenticate(t.token("a")).orElseThrow();
    GatewayException expired = assertThrows(GatewayException.class,
        () -> auth.recheck(a, ticketOf(auth.current(a), NOW)));
    assertEquals("ticket.expired", expired.code());
    // Mid-stream as at the stream's start: the expiry the ticket named (docs/status.md).
    assertEquals(Long.toUnsignedString(NOW),
        ((Fact) expired.facts().get("expiry_unix_ms")).value());
    VerifiedTicket live = ticketOf(auth.current(a), NOW + 1);
    auth.install(t.next(first, t.config(3, caller("a", 10, false))));
    assertEquals("access.read_revoked", code(() -> auth.recheck(a, live)));
  }

  @Test
  void aNegativeClockReadingIsAClockFailureAtIssueAndAtRecheck() throws Exception {
    Authorization auth = authorization(t.snapshot(t.config(3, caller("a", 10, true))), -1);
    CallerBinding a = auth.authenticate(t.token("a")).orElseThrow();
    Authorization.Grant g = auth.current(a, Right.READ);
    GatewayException issue = assertThrows(GatewayException.class, () -> auth.ticketExpiryMillis(g));
    assertEquals(io.transit.flight.diagnostic.Cause.CLOCK, issue.kind());
    assertEquals("ticket.clock", issue.code());
    assertEquals("ticket.clock", code(() -> auth.recheck(a, ticketOf(g, NOW))));
  }

  @Test
  void currentPolicyReadsTheLiveSnapshotAndNamesTheMissingRight() throws Exception {
    ResolvedConfig first = t.config(3, caller("a", 10, true), caller("b", 11, true));
    Authorization auth = authorization(t.snapshot(first), NOW);
    CallerBinding a = auth.authenticate(t.token("a")).orElseThrow();
    CallerBinding b = auth.authenticate(t.token("b")).orElseThrow();
    assertEquals(10, auth.current(a, Right.SEND, Right.INSPECT, Right.READ).scope().principal());

    // Bindings cached at authentication still say every right is held; the live snapshot rules.
    auth.install(t.next(first, t.config(3, caller("a", 10, false, true, true),
        caller("b", 11, true, false, false))));
    assertEquals("access.send_revoked", code(() -> auth.current(a, Right.SEND)));
    assertEquals(10, auth.current(a, Right.INSPECT, Right.READ).caller().principal());
    assertEquals("access.inspect_revoked", code(() -> auth.current(b, Right.INSPECT)));
    assertEquals("access.read_revoked", code(() -> auth.current(b, Right.READ)));
    assertEquals(11, auth.current(b).caller().principal(), "no right asked, none needed");

    // Remapped to another principal between authentication and the check; then removed.
    ResolvedConfig moved = t.config(3, caller("a", 12, true), caller("b", 11, true));
    auth.install(t.next(first, moved));
    assertEquals("access.binding_changed", code(() -> auth.current(a, Right.READ)));
    auth.install(t.next(moved, t.config(3, caller("b", 11, true))));
    assertEquals("access.binding_revoked", code(() -> auth.current(a)));
  }

  /**
   * A leaked credential rotated out ends what it authenticated: a unary call between its
   * authentication and its check, and a stream at its next disclosure boundary. The ticket names
   * the caller, not the credential, so the new one still redeems it.
   */
  @Test
  void aReplacedCredentialEndsTheCallsAndStreamsItAuthenticated() throws Exception {
    ResolvedConfig first = t.config(3, caller("a", 10, true));
    Authorization auth = authorization(t.snapshot(first), NOW);
    String leaked = t.token("a");
    CallerBinding old = auth.authenticate(leaked).orElseThrow();
    VerifiedTicket ticket = ticketOf(auth.current(old, Right.READ), NOW + 1);

    // The operator removes the file; the reload generates the replacement, as a first run would.
    Files.delete(dir.resolve("state").resolve("credentials").resolve("a"));
    auth.install(t.next(first, first));
    String replacement = t.token("a");
    assertFalse(leaked.equals(replacement));
    assertTrue(auth.authenticate(leaked).isEmpty());
    assertEquals("access.binding_changed", code(() -> auth.current(old, Right.READ)));
    assertEquals("access.binding_changed", code(() -> auth.recheck(old, ticket)));
    CallerBinding renewed = auth.authenticate(replacement).orElseThrow();
    assertEquals(10, auth.recheck(renewed, ticket).caller().principal());

    // A credential epoch bumped over the same token is a rotation too.
    ResolvedConfig bumped = t.config(3,
        caller("a", 10, true).replace("\"requests\"", "\"credential_epoch\": 2, \"requests\""));
    auth.install(t.next(first, bumped));
    assertEquals("access.binding_changed", code(() -> auth.recheck(renewed, ticket)));
    CallerBinding epochTwo = auth.authenticate(replacement).orElseThrow();
    assertEquals(2, epochTwo.credentialEpoch());
    assertEquals(10, auth.recheck(epochTwo, ticket).caller().principal());
  }

  /**
   * A reload whose rights the journal recorded is in force even when loading them back fails:
   * it is not reported as refused, and the next call loads them.
   */
  @Test
  void aReloadRecordedButNotLoadedBackIsInForce() throws Exception {
    ResolvedConfig first = t.config(3, caller("a", 10, true), caller("b", 11, true));
    JournalRights journal = JournalRights.openEmbedded(dir.resolve("journal.sqlite"));
    ledgers.add(journal);
    boolean[] failReads = {false};
    RightsLedger flaky = new RightsLedger() {
      @Override
      public long publish(byte[] document) {
        return journal.publish(document);
      }

      @Override
      public long epoch() {
        return journal.epoch();
      }

      @Override
      public Version current() {
        if (failReads[0]) {
          throw new IllegalStateException("the journal could not be read");
        }
        return journal.current();
      }
    };
    Authorization auth = new Authorization(t.snapshot(first), flaky,
        r -> engineRights.add(List.copyOf(r)),
        Clock.fixed(Instant.ofEpochMilli(NOW), ZoneOffset.UTC));
    failReads[0] = true;
    long epoch = auth.install(t.next(first, t.config(3, caller("a", 10, true))));
    assertEquals(2, epoch, "the rights were recorded");
    assertTrue(auth.authenticate(t.token("b")).isEmpty(), "the new snapshot is in force");
    failReads[0] = false;
    assertEquals(2, auth.rightsEpoch());
    CallerBinding a = auth.authenticate(t.token("a")).orElseThrow();
    assertEquals(10, auth.current(a, Right.READ).caller().principal());
  }

  @Test
  void reloadChangingWhatIsFixedAtStartIsRefusedAndNothingIsInstalled() throws Exception {
    ResolvedConfig first = t.config(3, caller("a", 10, true));
    Authorization auth = authorization(t.snapshot(first), NOW);
    AuthSnapshot before = auth.current();
    ResolvedConfig moved = first.withPort(first.port() + 1);
    assertThrows(ConfigException.class, () -> t.next(first, moved));
    ResolvedConfig.Transport l = first.transport();
    ResolvedConfig privateNetwork = with(first,
        new ResolvedConfig.Transport(l.tcp(), l.unixSocket(), l.tlsCertFile(), l.tlsKeyFile(),
            !l.privateNetwork()), first.segments());
    assertThrows(ConfigException.class, () -> t.next(first, privateNetwork),
        "listen.private_network is a listen setting");
    SegmentSettings.ObjectStore store = new SegmentSettings.ObjectStore(
        URI.create("http://127.0.0.1:9000"), "us-east-1", "b", "", "key", "secret",
        Duration.ofSeconds(1), Duration.ofSeconds(1), 4, Duration.ofMinutes(10));
    ResolvedConfig s3 = with(first, l, store);
    ResolvedConfig rotated = with(first, l, new SegmentSettings.ObjectStore(store.endpoint(),
        store.region(), store.bucket(), store.prefix(), store.accessKeyId(), "rotated",
        store.connectTimeout(), store.requestTimeout(), store.maxConnections(),
        store.sweepMinAge()));
    ConfigException e = assertThrows(ConfigException.class, () -> t.next(s3, rotated),
        "the object store's client keeps the keys it started with");
    assertFalse(e.getMessage().contains("rotated") || e.getMessage().contains("secret"),
        e.getMessage());
    assertSame(before, auth.current());
  }

  private static ResolvedConfig with(ResolvedConfig c, ResolvedConfig.Transport transport,
      SegmentSettings segments) {
    return new ResolvedConfig(c.host(), c.port(), c.stateDir(), c.realm(), c.realmName(),
        c.service(), c.ingress(), c.ticketTtlMs(), c.limits(), c.engine(), c.journal(),
        c.publications(), c.callers(), transport, segments);
  }

  /**
   * A rotation recorded in the journal but not installed here (another replica's reload, or this
   * one's whose outcome was unknown) ends what the retired credential may do: the rights in the
   * journal name the credential epoch they were granted under. Until 2026-12-07 they did not,
   * and a file that rotated a credential and restored a right in one reload gave that right back
   * to the retired credential wherever the reload had not been installed.
   */
  @Test
  void rightsRecordedForARotatedCredentialDoNotServeTheRetiredOne() throws Exception {
    ResolvedConfig first = t.config(3, caller("a", 10, false));
    Authorization one = authorization(t.snapshot(first), NOW);
    Authorization two = authorization(t.snapshot(first), NOW);
    CallerBinding retired = two.authenticate(t.token("a")).orElseThrow();
    assertEquals("access.read_revoked", code(() -> two.current(retired, Right.READ)));

    ResolvedConfig rotated = t.config(3,
        caller("a", 10, true).replace("\"requests\"", "\"credential_epoch\": 2, \"requests\""));
    one.install(t.next(first, rotated));
    assertEquals("access.binding_changed", code(() -> two.current(retired, Right.READ)));
    CallerBinding current = one.authenticate(t.token("a")).orElseThrow();
    assertEquals(10, one.current(current, Right.READ).caller().principal());
  }

  /**
   * Rights a replica with another key for the principal recorded (its start racing this one's
   * check of the keys, PrincipalKeys) do not serve this replica's key: the two keys sign two
   * admission streams of one principal, and a retry through the other would conflict with its
   * record. Since 2026-12-07 the rights name the SHA-256 of each principal's public key.
   */
  @Test
  void rightsRecordedForAnotherKeyOfThePrincipalDoNotServeThisReplicasKey() throws Exception {
    ResolvedConfig cfg = t.config(3, caller("a", 10, true));
    Authorization one = authorization(t.snapshot(cfg), NOW);
    CallerBinding a = one.authenticate(t.token("a")).orElseThrow();
    assertEquals(10, one.current(a, Right.READ).caller().principal());

    Path elsewhere = Files.createDirectories(dir.resolve("other"));
    TestBindings other = new TestBindings(elsewhere); // its own keys/, the same journal
    authorization(other.snapshot(other.config(3, caller("a", 10, true))), NOW);
    assertEquals("access.binding_changed", code(() -> one.current(a, Right.READ)));
  }

  /**
   * Two replicas on one journal: a reload on one is in force on the other at its next decision,
   * with no reload there — grants, rechecks and the rights its engine holds — and a grant given
   * back the same way is too.
   */
  @Test
  void aReloadOnOneReplicaRulesTheOthersNextDecision() throws Exception {
    ResolvedConfig first = t.config(3, caller("a", 10, true), caller("b", 11, true));
    Authorization one = authorization(t.snapshot(first), NOW);
    Authorization two = authorization(t.snapshot(first), NOW);
    assertEquals(1, two.rightsEpoch(), "the second start found the same rights: no new epoch");
    CallerBinding a = two.authenticate(t.token("a")).orElseThrow();
    VerifiedTicket ticket = ticketOf(two.current(a, Right.READ), NOW + 1);

    ResolvedConfig revoked = t.config(3, caller("a", 10, false), caller("b", 11, true));
    one.install(t.next(first, revoked));
    assertEquals(2, one.rightsEpoch());
    assertEquals("access.read_revoked", code(() -> two.current(a, Right.READ)));
    assertEquals("access.read_revoked", code(() -> two.recheck(a, ticket)));
    assertEquals(2, two.rightsEpoch());
    PrincipalRights engineA = engineRights.get(engineRights.size() - 1).stream()
        .filter(r -> r.principal() == 10).findFirst().orElseThrow();
    assertFalse(engineA.mayRead(9), "the second replica's engine took the journal's rights");
    assertEquals(10, two.current(a, Right.SEND).caller().principal(), "other rights stay");

    one.install(t.next(revoked, first));
    assertEquals(3, one.rightsEpoch(), "granting back is a new version");
    assertEquals(a.principal(), two.recheck(a, ticket).caller().principal());
    one.install(t.next(first, first));
    assertEquals(3, two.rightsEpoch(), "a reload of unchanged rights records nothing");
  }

  /**
   * A caller another replica's reload removed is revoked here; one it remapped is refused as
   * changed until this replica's file agrees; an unreadable journal decides nothing.
   */
  @Test
  void removedAndRemappedCallersAndAnUnreadableJournalAreRefused() throws Exception {
    ResolvedConfig first = t.config(3, caller("a", 10, true), caller("b", 11, true));
    Authorization one = authorization(t.snapshot(first), NOW);
    Authorization two = authorization(t.snapshot(first), NOW);
    CallerBinding a = two.authenticate(t.token("a")).orElseThrow();
    CallerBinding b = two.authenticate(t.token("b")).orElseThrow();
    one.install(t.next(first, t.config(3, caller("a", 12, true))));
    assertEquals("access.binding_changed", code(() -> two.current(a)));
    assertEquals("access.binding_revoked", code(() -> two.current(b)));
    assertTrue(engineRights.get(engineRights.size() - 1).isEmpty(),
        "neither caller is registered with the second replica's engine");

    ledgers.get(1).close();
    GatewayException e = assertThrows(GatewayException.class, () -> two.current(a));
    assertEquals("query.journal_unavailable", e.code());
    assertEquals(io.grpc.Status.Code.UNAVAILABLE, e.kind().code());
  }

  private static String code(Runnable r) {
    return assertThrows(GatewayException.class, r::run).code();
  }
}
