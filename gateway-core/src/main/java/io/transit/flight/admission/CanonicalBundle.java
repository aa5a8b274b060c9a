package io.transit.flight.admission;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.DeterministicProto;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.TableDeclaration;
import java.util.Objects;

/**
 * The canonical request bundle of one statement: what is uploaded, sealed and submitted. Built
 * only from the caller's binding, its published {@link TableDeclaration}, the budgets and the SQL
 * bytes exactly as received — no time, no randomness — so a replacement gateway rebuilds the same
 * bytes and therefore the same signed commands.
 *
 * <p>Layout ({@link RequestBundle}, deterministic serialization): version 1; the declaration;
 * its fingerprint ({@link DeclarationFingerprint}); the SQL bytes; the budgets; a {@link
 * PrincipalProof} (principal, has_role, role, credential epoch, SHA-256 of the SQL bytes,
 * recipient = gateway service id) signed as {@link NativeSignatures} describes.
 *
 * <p>Immutable and thread-safe; accessors return copies.
 */
public final class CanonicalBundle {
  /** The bundle layout version this gateway writes. */
  public static final int VERSION = 1;

  private final RequestBundle message;
  private final byte[] bytes;
  private final byte[] sha256;

  private CanonicalBundle(RequestBundle message) {
    this.message = message;
    this.bytes = DeterministicProto.bytes(message);
    this.sha256 = Digests.sha256(bytes);
  }

  /**
   * Builds the bundle. {@code sql} must be well-formed UTF-8 (else {@code INVALID_REQUEST},
   * {@code admission.invalid_sql}); it is copied, never re-encoded.
   *
   * @throws IllegalArgumentException if {@code table} carries unknown fields (see {@link
   *     DeclarationFingerprint#of})
   */
  public static CanonicalBundle build(
      AdmissionSubject caller, TableDeclaration table, Budgets budgets, byte[] sql) {
    Objects.requireNonNull(caller, "caller");
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(budgets, "budgets");
    Objects.requireNonNull(sql, "sql");
    ByteString sqlBytes = ByteString.copyFrom(sql);
    if (!sqlBytes.isValidUtf8()) {
      throw GatewayException.of(
          Cause.INVALID_REQUEST, "admission.invalid_sql", "the SQL text is not valid UTF-8");
    }
    PrincipalProof unsigned =
        PrincipalProof.newBuilder()
            .setPrincipal(caller.principal())
            .setHasRole(caller.hasRole())
            .setRole(caller.role())
            .setCredentialEpoch(caller.credentialEpoch())
            .setQuerySha256(ByteString.copyFrom(Digests.sha256(sql)))
            .setRecipient(caller.serviceId())
            .build();
    RequestBundle bundle =
        RequestBundle.newBuilder()
            .setVersion(VERSION)
            .setTable(table)
            .setDeclarationSha256(ByteString.copyFrom(DeclarationFingerprint.of(table)))
            .setSql(sqlBytes)
            .setBudgets(budgets)
            .setProof(NativeSignatures.signProof(unsigned, caller.key()))
            .build();
    return new CanonicalBundle(bundle);
  }

  public RequestBundle message() {
    return message;
  }

  /** The canonical bytes (a copy): what the upload parts carry. */
  public byte[] bytes() {
    return bytes.clone();
  }

  /** SHA-256 of {@link #bytes()} (a copy): what begin, seal and submit name. */
  public byte[] sha256() {
    return sha256.clone();
  }

  public int size() {
    return bytes.length;
  }
}
