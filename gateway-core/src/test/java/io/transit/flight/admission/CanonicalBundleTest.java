package io.transit.flight.admission;

import static io.transit.flight.admission.Fixtures.*;
import static org.junit.jupiter.api.Assertions.*;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.RequestBundle;
import org.junit.jupiter.api.Test;

class CanonicalBundleTest {
  private static final byte[] SQL = sql("SELECT id, fare FROM trips WHERE distance > 5 -- é");

  @Test
  void sameInputsGiveSameBytes() {
    CanonicalBundle a = CanonicalBundle.build(caller(), table(), budgets(), SQL);
    CanonicalBundle b = CanonicalBundle.build(caller(), table(), budgets(), SQL.clone());
    assertArrayEquals(a.bytes(), b.bytes());
    assertArrayEquals(Digests.sha256(a.bytes()), a.sha256());
  }

  @Test
  void roleEpochSqlRecipientAndTableEachChangeTheBytes() {
    byte[] base = CanonicalBundle.build(caller(), table(), budgets(), SQL).bytes();
    AdmissionSubject otherRole = new AdmissionSubject(PRINCIPAL, key(), true, ROLE + 1, EPOCH, SERVICE);
    AdmissionSubject noRole = AdmissionSubject.withoutRole(PRINCIPAL, key(), EPOCH, SERVICE);
    AdmissionSubject otherEpoch = new AdmissionSubject(PRINCIPAL, key(), true, ROLE, EPOCH + 1, SERVICE);
    AdmissionSubject otherService = new AdmissionSubject(PRINCIPAL, key(), true, ROLE, EPOCH, SERVICE + 1);
    assertFalse(java.util.Arrays.equals(base, build(otherRole, SQL)));
    assertFalse(java.util.Arrays.equals(base, build(noRole, SQL)));
    assertFalse(java.util.Arrays.equals(base, build(otherEpoch, SQL)));
    assertFalse(java.util.Arrays.equals(base, build(otherService, SQL)));
    assertFalse(java.util.Arrays.equals(base, build(caller(), sql("SELECT id FROM trips"))));
    byte[] renamed =
        CanonicalBundle.build(caller(), table().toBuilder().setTable("trips2").build(), budgets(), SQL)
            .bytes();
    assertFalse(java.util.Arrays.equals(base, renamed));
  }

  @Test
  void bundleCarriesSqlExactlyFingerprintAndVerifiableProof() throws Exception {
    RequestBundle parsed =
        RequestBundle.parseFrom(CanonicalBundle.build(caller(), table(), budgets(), SQL).bytes());
    assertEquals(1, parsed.getVersion());
    assertEquals(ByteString.copyFrom(SQL), parsed.getSql());
    assertArrayEquals(
        DeclarationFingerprint.of(table()),
        parsed.getDeclarationSha256().toByteArray());
    PrincipalProof proof = parsed.getProof();
    assertEquals(PRINCIPAL, proof.getPrincipal());
    assertTrue(proof.getHasRole());
    assertEquals(ROLE, proof.getRole());
    assertEquals(EPOCH, proof.getCredentialEpoch());
    assertEquals(SERVICE, proof.getRecipient());
    assertArrayEquals(Digests.sha256(SQL), proof.getQuerySha256().toByteArray());
    assertTrue(NativeSignatures.verifyProof(proof, key().publicKey()));
    assertFalse(NativeSignatures.verifyProof(proof.toBuilder().setRecipient(SERVICE + 1).build(),
        key().publicKey()));
    assertFalse(NativeSignatures.verifyProof(proof, Ed25519.fromSeed(seed(2)).publicKey()));
  }

  @Test
  void invalidUtf8IsInvalidArgument() {
    GatewayException e =
        assertThrows(
            GatewayException.class,
            () -> CanonicalBundle.build(caller(), table(), budgets(), new byte[] {(byte) 0xC3}));
    assertEquals(Status.Code.INVALID_ARGUMENT, e.kind().code());
    assertEquals("admission.invalid_sql", e.code());
  }

  @Test
  void absentRoleMustBeZero() {
    assertThrows(
        IllegalArgumentException.class,
        () -> new AdmissionSubject(PRINCIPAL, key(), false, 5, EPOCH, SERVICE));
  }

  private static byte[] build(AdmissionSubject caller, byte[] sql) {
    return CanonicalBundle.build(caller, table(), budgets(), sql).bytes();
  }
}
