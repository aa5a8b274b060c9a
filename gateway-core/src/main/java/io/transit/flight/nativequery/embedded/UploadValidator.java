package io.transit.flight.nativequery.embedded;

import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.AccessUse;
import io.transit.flight.nativequery.Planner;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.QueryPlan;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * The upload state machine of one principal's namespaces: begin → parts in index order → seal
 * (digest over the assembled parts) → submit (bundle, proof, rights, publication and plan
 * checks). Each step either updates the journal and returns, or throws a {@link Rejection} that
 * the caller records as a REJECTED outcome; a command continuing an upload the history bound
 * forgot throws {@code query.history_pruned} instead, recorded nowhere. Called only inside a
 * journal transaction (so on a sending thread, serialized by the journal).
 */
final class UploadValidator {
  /** A deterministic validation failure, recorded as REJECTED with its {@code query.<code>}. */
  static final class Rejection extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String code;

    Rejection(String code, String message) {
      super(message, null, false, false);
      this.code = code;
    }

    Rejection(QueryCode code, String message) {
      this(code.code(), message);
    }

    String code() {
      return code;
    }
  }

  private static final int BUNDLE_VERSION = 1;

  private final JournalStore journal;
  private final RightsRegistry rights;
  private final RequesterCheck requester;
  private final Planner planner;
  private final EngineOptions options;
  private final SignatureVerdicts proofs;
  /** Wall-clock milliseconds: an upload's begin time (the history bound's input). */
  private final LongSupplier clock;

  UploadValidator(JournalStore journal, RightsRegistry rights, RequesterCheck requester,
      Planner planner, EngineOptions options, SignatureVerdicts proofs, LongSupplier clock) {
    this.proofs = proofs;
    this.clock = clock;
    this.journal = journal;
    this.rights = rights;
    this.requester = requester;
    this.planner = planner;
    this.options = options;
  }

  /**
   * What an applied command leaves the caller: the new correlation of an accepted submit (else
   * 0), and a seal's assembled bundle (else null): every byte of it verified, recorded and equal
   * to the begun digest, so an early run may store its result.
   */
  record Applied(long correlation, byte[] sealedBundle) {
    static final Applied NOTHING = new Applied(0, null);
  }

  /** Applies the command; see {@link Applied}. */
  Applied apply(NativeCommand c) throws SQLException {
    switch (c.getBodyCase()) {
      case BEGIN -> begin(c);
      case PART -> part(c);
      case SEAL -> {
        return new Applied(0, seal(c));
      }
      case SUBMIT -> {
        return new Applied(submit(c), null);
      }
      default -> throw new Rejection(QueryCode.INVALID_COMMAND, "unknown command body");
    }
    return Applied.NOTHING;
  }

  private void begin(NativeCommand c) throws SQLException {
    var b = c.getBegin();
    if (c.getNamespace() != c.getSequence()) {
      throw new Rejection(QueryCode.INVALID_COMMAND,
          "a begin command's namespace must equal its sequence");
    }
    if (journal.upload(c.getPrincipal(), c.getNamespace()).isPresent()) {
      throw new Rejection(QueryCode.NAMESPACE_CONFLICT, "the namespace is already used");
    }
    if (b.getBundleBytes() < 1 || Long.compareUnsigned(b.getBundleBytes(), options.maxBundleBytes()) > 0) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "bundle_bytes " + Long.toUnsignedString(
          b.getBundleBytes()) + " (expected: 1.." + options.maxBundleBytes() + ")");
    }
    if (b.getPartCount() < 1 || b.getPartCount() > options.maxParts()
        || Integer.toUnsignedLong(b.getPartCount()) > b.getBundleBytes()) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "part_count "
          + Integer.toUnsignedString(b.getPartCount()) + " (expected: 1.." + options.maxParts()
          + " and at most bundle_bytes)");
    }
    if (b.getBundleSha256().size() != 32) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "bundle_sha256 must be 32 bytes");
    }
    journal.beginUpload(c.getPrincipal(), c.getNamespace(), b.getBundleBytes(), b.getPartCount(),
        b.getBundleSha256().toByteArray(), clock.getAsLong());
  }

  private JournalStore.Upload upload(NativeCommand c, JournalStore.UploadState expected)
      throws SQLException {
    Optional<JournalStore.Upload> u = journal.upload(c.getPrincipal(), c.getNamespace());
    if (u.isEmpty() && forgotten(c)) {
      // A resumed chain whose begin replayed just before a sweep forgot the abandoned upload
      // and the begin's record: pruned, as the begin would now be, unrecorded. Not a recorded
      // rejection telling the caller to change a request that was fine (until 2026-12-07).
      throw QueryCode.HISTORY_PRUNED.failure("the upload this command continues was forgotten")
          .withOutcome(Outcome.UNKNOWN)
          .withActions(Action.USE_NEXT_SEQUENCE)
          .with(Fact.unsigned("sequence", c.getSequence()))
          .with(Fact.unsigned("namespace", c.getNamespace()));
    }
    if (u.isEmpty() || Long.compareUnsigned(c.getNamespace(), c.getSequence()) >= 0) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "no upload was begun at namespace "
          + Long.toUnsignedString(c.getNamespace()));
    }
    if (u.get().state() != expected) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "the upload is " + u.get().state()
          + " (expected: " + expected + ")");
    }
    return u.get();
  }

  /**
   * True when {@code c}'s namespace is a used sequence from the principal's first on whose record
   * is gone: every such sequence was recorded, so the history bound forgot it (Retention).
   */
  private boolean forgotten(NativeCommand c) throws SQLException {
    long namespace = c.getNamespace();
    return Long.compareUnsigned(namespace, options.firstSequence()) >= 0
        && Long.compareUnsigned(namespace, c.getSequence()) < 0
        && journal.command(c.getPrincipal(), namespace).isEmpty();
  }

  private void part(NativeCommand c) throws SQLException {
    JournalStore.Upload u = upload(c, JournalStore.UploadState.OPEN);
    var p = c.getPart();
    if (p.getIndex() != u.receivedParts() || u.receivedParts() >= u.partCount()) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "part index "
          + Integer.toUnsignedString(p.getIndex()) + " (expected: " + u.receivedParts()
          + " of " + u.partCount() + ")");
    }
    long total = u.receivedBytes() + p.getData().size();
    if (p.getData().isEmpty() || total > u.declaredBytes()) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "part of " + p.getData().size()
          + " bytes would bring the upload to " + total + " (expected: non-empty, at most "
          + u.declaredBytes() + ")");
    }
    journal.addPart(c.getPrincipal(), c.getNamespace(), p.getIndex(), p.getData().toByteArray());
  }

  /** Returns the assembled bundle's bytes. */
  private byte[] seal(NativeCommand c) throws SQLException {
    JournalStore.Upload u = upload(c, JournalStore.UploadState.OPEN);
    if (u.receivedParts() != u.partCount() || u.receivedBytes() != u.declaredBytes()) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "the upload has " + u.receivedParts()
          + " parts and " + u.receivedBytes() + " bytes (expected: " + u.partCount() + " and "
          + u.declaredBytes() + ")");
    }
    byte[] declared = c.getSeal().getBundleSha256().toByteArray();
    byte[] assembled = journal.assembled(c.getPrincipal(), c.getNamespace());
    byte[] actual = Digests.sha256(assembled);
    if (!Arrays.equals(declared, u.bundleSha256()) || !Arrays.equals(actual, u.bundleSha256())) {
      throw new Rejection(QueryCode.INVALID_COMMAND,
          "the sealed digest does not match the begun digest and the assembled parts");
    }
    prefetchProof(c.getPrincipal(), assembled);
    journal.setUploadState(c.getPrincipal(), c.getNamespace(), JournalStore.UploadState.SEALED);
    return assembled;
  }

  /**
   * The submit will check this bundle's proof: start that verification now, on a helper, so it
   * overlaps the seal's commit and the submit. Only a head start — the submit's
   * check decides, with the key current then; a bundle that does not parse is the submit's
   * rejection to record, not the seal's.
   */
  private void prefetchProof(long principal, byte[] assembled) {
    try {
      RequestBundle bundle = RequestBundle.parseFrom(assembled);
      if (bundle.hasProof() && bundle.getProof().getPrincipal() == principal) {
        proofs.prefetchProof(bundle.getProof(), rights.require(principal).key());
      }
    } catch (InvalidProtocolBufferException | GatewayException e) {
      // Nothing to start: the submit verifies (and rejects) as it would without a head start.
    }
  }

  private long submit(NativeCommand c) throws SQLException {
    JournalStore.Upload u = upload(c, JournalStore.UploadState.SEALED);
    if (!Arrays.equals(c.getSubmit().getBundleSha256().toByteArray(), u.bundleSha256())) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "the submitted digest is not the sealed one");
    }
    RequestBundle bundle;
    try {
      bundle = RequestBundle.parseFrom(journal.assembled(c.getPrincipal(), c.getNamespace()));
    } catch (InvalidProtocolBufferException e) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "the sealed bundle does not parse");
    }
    admit(c.getPrincipal(), bundle);
    long correlation = journal.allocateCorrelation();
    journal.insertAccepted(correlation, c.getPrincipal(), c.getNamespace(), u.bundleSha256());
    journal.setUploadState(c.getPrincipal(), c.getNamespace(), JournalStore.UploadState.SUBMITTED);
    return correlation;
  }

  /** Every check of a submitted bundle, against the principal's current rights. */
  private void admit(long principal, RequestBundle bundle) {
    if (bundle.getVersion() != BUNDLE_VERSION || !bundle.hasTable() || !bundle.hasProof()
        || !bundle.hasBudgets()) {
      throw new Rejection(QueryCode.INVALID_COMMAND,
          "the bundle needs version 1, a table, budgets and a proof");
    }
    PrincipalRights r;
    try {
      r = rights.require(principal);
    } catch (GatewayException e) {
      throw new Rejection(QueryCode.ACCESS_DENIED, e.getMessage());
    }
    PrincipalProof proof = bundle.getProof();
    byte[] sqlSha = Digests.sha256(bundle.getSql().toByteArray());
    if (proof.getPrincipal() != principal
        || !Arrays.equals(proof.getQuerySha256().toByteArray(), sqlSha)
        || proof.getCredentialEpoch() != r.credentialEpoch()
        || !proofs.verifyProof(proof, r.key())) {
      throw new Rejection(QueryCode.ACCESS_DENIED,
          "the principal proof does not match the principal, query bytes, credential epoch or key");
    }
    if (options.recipient() != 0 && proof.getRecipient() != options.recipient()) {
      // A proof addressed to another service must not be replayable here.
      throw new Rejection(QueryCode.ACCESS_DENIED, "proof recipient "
          + Long.toUnsignedString(proof.getRecipient()) + " is not this engine's service id "
          + Long.toUnsignedString(options.recipient()));
    }
    TableDeclaration table = bundle.getTable();
    byte[] fingerprint;
    try {
      fingerprint = DeclarationFingerprint.of(table);
    } catch (IllegalArgumentException e) {
      throw new Rejection(QueryCode.INVALID_COMMAND, e.getMessage());
    }
    if (!Arrays.equals(bundle.getDeclarationSha256().toByteArray(), fingerprint)) {
      throw new Rejection(QueryCode.INVALID_COMMAND, "declaration_sha256 does not match the table");
    }
    try {
      // The same check the query client makes before the gateway compiles or discloses anything.
      requester.check(principal, table, AccessUse.DISCLOSE);
    } catch (GatewayException e) {
      throw new Rejection(e.code(), e.getMessage());
    }
    Budgets b = bundle.getBudgets();
    if (b.getRowsPerSegment() < 1 || b.getMaxSegmentBytes() == 0) {
      throw new Rejection(QueryCode.INVALID_PLAN,
          "budgets need rows_per_segment >= 1 and max_segment_bytes >= 1");
    }
    try {
      QueryPlan plan = planner.plan(bundle.getSql().toString(StandardCharsets.UTF_8), table);
      PlanTranslator.validate(plan, table);
    } catch (GatewayException e) {
      throw new Rejection(e.code(), e.getMessage());
    }
  }
}
