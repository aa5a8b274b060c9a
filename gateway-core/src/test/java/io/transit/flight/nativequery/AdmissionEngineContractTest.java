package io.transit.flight.nativequery;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.transit.flight.admission.AdmissionConfig;
import io.transit.flight.admission.AdmissionLimiter;
import io.transit.flight.admission.AdmissionRequest;
import io.transit.flight.admission.AdmissionService;
import io.transit.flight.admission.Admitted;
import io.transit.flight.admission.AdmissionSubject;
import io.transit.flight.admission.CanonicalBundle;
import io.transit.flight.admission.CommandChain;
import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.nativequery.embedded.DemoData;
import io.transit.flight.nativequery.embedded.EmbeddedEngine;
import io.transit.flight.nativequery.embedded.EngineOptions;
import io.transit.flight.nativequery.embedded.EngineTestSupport;
import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.QueryCompiler;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The two sides of the native contract together: what admission builds (CanonicalBundle,
 * CommandChain, signed with NativeSignatures) is accepted and executed by the real
 * EmbeddedEngine, which compiles with the real QueryCompiler and checks the proof recipient.
 */
class AdmissionEngineContractTest {
  private static final long PRINCIPAL = Long.parseUnsignedLong("18446744073709551000");
  private static final long ROLE = 12;
  private static final long EPOCH = 3;
  private static final long SERVICE = 4242;
  private static final Ed25519.KeyPair KEY = Ed25519.fromSeed(seed(9));
  private static final String SQL = "SELECT id, qty FROM demo_mixed WHERE id < 10";

  @TempDir static Path data;
  @TempDir Path state;
  private static TableDeclaration table;
  private static List<Publication> publications;
  private EmbeddedEngine engine;

  private static byte[] seed(int b) {
    byte[] s = new byte[32];
    Arrays.fill(s, (byte) b);
    return s;
  }

  @BeforeAll
  static void demo() throws Exception {
    publications = DemoData.generate(data);
    table = publications.get(1).declaration();
  }

  @BeforeEach
  void open() throws Exception {
    PrincipalRights rights =
        new PrincipalRights(PRINCIPAL, KEY.publicKey(), EPOCH, true, true, Set.of(DemoData.SOURCE));
    engine = EmbeddedEngine.open(state, EngineOptions.defaults().withRecipient(SERVICE),
        publications, List.of(rights), QueryCompiler::compile);
  }

  @AfterEach
  void close() throws InterruptedException {
    EngineTestSupport.closeWithoutLeaks(engine);
  }

  private static Budgets budgets() {
    return Budgets.newBuilder()
        .setMaxResultRows(1000)
        .setMaxResultBytes(1 << 20)
        .setMaxSegmentBytes(1 << 20)
        .setRowsPerSegment(4)
        .build();
  }

  private static AdmissionSubject caller(long serviceId) {
    return new AdmissionSubject(PRINCIPAL, KEY, true, ROLE, EPOCH, serviceId);
  }

  private static long deadline() {
    return System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
  }

  private static ReadAccess access() {
    return new ReadAccess(PRINCIPAL, true, ROLE, DemoData.SOURCE);
  }

  @Test
  void admissionChainIsAcceptedExecutedAndReplayed() throws Exception {
    CanonicalBundle bundle = CanonicalBundle.build(caller(SERVICE), table, budgets(),
        SQL.getBytes(StandardCharsets.UTF_8));
    long first = engine.nextSequence(PRINCIPAL);
    // 64-byte parts: several part commands, as a large statement would need.
    CommandChain chain = CommandChain.derive(bundle.bytes(), PRINCIPAL, KEY, first, 64);
    List<CommandOutcome> outcomes = new ArrayList<>();
    for (SignedCommand c : chain.commands()) {
      CommandOutcome o = engine.send(c);
      assertEquals(CommandOutcome.Kind.ACCEPTED, o.getKind(), o.getCode() + " " + o.getMessage());
      outcomes.add(o);
    }
    assertEquals(chain.nextSequence(), engine.nextSequence(PRINCIPAL));
    long correlation = outcomes.get(outcomes.size() - 1).getCorrelation();
    assertNotEquals(0, correlation);

    QueryStatus status = engine.awaitQuery(access(), correlation, deadline());
    assertEquals(QueryStatus.State.SUCCEEDED, status.getState(), status.getMessage());
    assertEquals(10, status.getTotalRows());
    byte[] manifestBytes = engine.readManifest(access(), correlation);
    assertArrayEquals(status.getManifestSha256().toByteArray(), Digests.sha256(manifestBytes));
    ResultManifest manifest = ResultManifest.parseFrom(manifestBytes);
    assertArrayEquals(bundle.sha256(), manifest.getBundleSha256().toByteArray());
    assertArrayEquals(DeclarationFingerprint.of(table),
        manifest.getDeclarationSha256().toByteArray());
    assertEquals(PRINCIPAL, manifest.getPrincipal());
    assertEquals(ROLE, manifest.getRole());
    assertEquals(first, manifest.getNamespace());
    assertEquals(List.of("id", "qty"),
        manifest.getColumnsList().stream().map(c -> c.getName()).toList());

    // A rebuilt chain (a retry, or a replacement gateway) is byte-identical and replays.
    CommandChain again = CommandChain.derive(CanonicalBundle.build(caller(SERVICE), table,
        budgets(), SQL.getBytes(StandardCharsets.UTF_8)).bytes(), PRINCIPAL, KEY, first, 64);
    for (int i = 0; i < again.commands().size(); i++) {
      assertEquals(outcomes.get(i), engine.send(again.commands().get(i)));
    }
  }

  @Test
  void admissionServiceRunsAgainstTheRealEngine() {
    AdmissionService service = new AdmissionService(
        engine, new AdmissionLimiter(4, 2), AdmissionConfig.defaults());
    long first = engine.nextSequence(PRINCIPAL);
    Admitted admitted = service.admit(new AdmissionRequest(caller(SERVICE), table, budgets(),
        first, SQL.getBytes(StandardCharsets.UTF_8), deadline()));
    assertEquals(first, admitted.namespace());
    assertEquals(10, admitted.totalRows());
    assertEquals(admitted.nextSequence(), engine.nextSequence(PRINCIPAL));
  }

  @Test
  void proofForAnotherServiceIsRejectedAtSubmit() {
    CanonicalBundle bundle = CanonicalBundle.build(caller(SERVICE + 1), table, budgets(),
        SQL.getBytes(StandardCharsets.UTF_8));
    CommandChain chain = CommandChain.derive(bundle.bytes(), PRINCIPAL, KEY,
        engine.nextSequence(PRINCIPAL), CommandChain.DEFAULT_PART_BYTES);
    CommandOutcome last = null;
    for (SignedCommand c : chain.commands()) {
      last = engine.send(c);
    }
    assertEquals(CommandOutcome.Kind.REJECTED, last.getKind());
    assertEquals("query.access_denied", last.getCode());
    assertEquals("proof recipient " + (SERVICE + 1) + " is not this engine's service id "
        + SERVICE, last.getMessage());
  }
}
