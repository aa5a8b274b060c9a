package io.transit.flight.admission;

import io.transit.flight.nativequery.Planner;
import io.transit.flight.query.QueryCompiler;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.crypto.DeterministicProto;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.AccessUse;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.TableDeclaration;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A small in-memory stand-in for the native query system's public query client, for admission
 * unit tests: a per-principal journal (replay of identical bytes, conflict on different bytes, gap
 * ahead of the next expected sequence), uploads assembled from parts and checked at seal, submit
 * verifying the principal proof and current credential epoch, and a trivial "execution" whose
 * result is one row per declared column. It records every command sent, can lose an outcome
 * before or after recording, and can hold queries running until {@link #release()}.
 *
 * <p>Thread-safe: every method runs under the one monitor {@code lock}; {@link #awaitQuery} waits
 * on it.
 */
final class InMemoryNativeClient implements NativeQueryClient {
  /**
   * Faults at one sequence: the outcome lost before or after the record, or the caller's send
   * right revoked (a reload mid-upload: the command is refused, nothing recorded).
   */
  enum Fault { BEFORE_RECORD, AFTER_RECORD, REVOKED }

  private record Entry(byte[] command, CommandOutcome outcome) {}

  private static final class Principal {
    final Ed25519.PublicKey key;
    long epoch;
    long next;
    final Map<Long, Entry> journal = new HashMap<>();

    Principal(Ed25519.PublicKey key, long epoch, long next) {
      this.key = key;
      this.epoch = epoch;
      this.next = next;
    }
  }

  private static final class Upload {
    final NativeCommand begin;
    final ByteArrayOutputStream data = new ByteArrayOutputStream();
    int parts;
    boolean sealed;

    Upload(NativeCommand begin) {
      this.begin = begin;
    }
  }

  private record Query(RequestBundle bundle, long principal, long namespace, byte[] bundleSha256) {}

  private final Object lock = new Object();
  // All fields below are guarded by lock.
  private final Map<Long, Principal> principals = new HashMap<>();
  private final Map<List<Long>, Upload> uploads = new HashMap<>();
  private final Map<Long, Query> queries = new HashMap<>();
  private final Map<Long, QueryStatus> statuses = new HashMap<>();
  private final Map<Long, byte[]> manifests = new HashMap<>();
  private final List<NativeCommand> sent = new ArrayList<>();
  private final List<Announcement> announcements = new ArrayList<>();
  private final List<List<Long>> withdrawn = new ArrayList<>();
  private long nextCorrelation = 1;
  private int executions;
  private boolean hold;
  private RuntimeException awaitFailure;
  private Fault fault;
  private long faultSequence;

  void register(long principal, Ed25519.PublicKey key, long epoch, long firstSequence) {
    synchronized (lock) {
      principals.put(principal, new Principal(key, epoch, firstSequence));
    }
  }

  void rotateEpoch(long principal, long epoch) {
    synchronized (lock) {
      principals.get(principal).epoch = epoch;
    }
  }

  void injectFault(Fault kind, long sequence) {
    synchronized (lock) {
      fault = kind;
      faultSequence = sequence;
    }
  }

  /** The next wait fails with {@code e} (an engine that could not sync before answering). */
  void failNextAwait(RuntimeException e) {
    synchronized (lock) {
      awaitFailure = e;
    }
  }

  void holdQueries() {
    synchronized (lock) {
      hold = true;
    }
  }

  /** Lets held queries finish and wakes their waiters. */
  void release() {
    synchronized (lock) {
      hold = false;
      for (Map.Entry<Long, QueryStatus> e : statuses.entrySet()) {
        if (e.getValue().getState() == QueryStatus.State.ACCEPTED) {
          finish(e.getKey());
        }
      }
      lock.notifyAll();
    }
  }

  /** A bundle announced, and how many commands had been received before it. */
  record Announcement(long principal, long namespace, byte[] bundle, int commandsBefore) {}

  @Override
  public void announce(long principal, long namespace, byte[] bundle) {
    synchronized (lock) {
      announcements.add(new Announcement(principal, namespace, bundle.clone(), sent.size()));
    }
  }

  List<Announcement> announcements() {
    synchronized (lock) {
      return List.copyOf(announcements);
    }
  }

  @Override
  public void withdraw(long principal, long namespace) {
    synchronized (lock) {
      withdrawn.add(List.of(principal, namespace));
    }
  }

  /** The (principal, namespace) of every announcement withdrawn, in order. */
  List<List<Long>> withdrawn() {
    synchronized (lock) {
      return List.copyOf(withdrawn);
    }
  }

  /** Every command received, replays included, in arrival order. */
  List<NativeCommand> sent() {
    synchronized (lock) {
      return List.copyOf(sent);
    }
  }

  int recorded(long principal) {
    synchronized (lock) {
      return principals.get(principal).journal.size();
    }
  }

  int executions() {
    synchronized (lock) {
      return executions;
    }
  }

  @Override
  public Decided decide(SignedCommand signed) {
    synchronized (lock) {
      byte[] bytes = signed.getCommand().toByteArray();
      NativeCommand command;
      try {
        command = NativeCommand.parseFrom(bytes);
      } catch (InvalidProtocolBufferException e) {
        throw GatewayException.of(Cause.INVALID_PROTOBUF, "query.invalid_command", "bad command");
      }
      sent.add(command);
      Principal p = principals.get(command.getPrincipal());
      if (p == null
          || !NativeSignatures.verifyCommand(signed, p.key)) {
        throw QueryCode.ACCESS_DENIED.failure("unknown principal or bad command signature");
      }
      long seq = command.getSequence();
      if (fault == Fault.BEFORE_RECORD && faultSequence == seq) {
        fault = null;
        throw GatewayException.of(Cause.UNKNOWN_OUTCOME, "native.unknown", "lost before recording");
      }
      if (fault == Fault.REVOKED && faultSequence == seq) {
        fault = null;
        throw QueryCode.ACCESS_DENIED.failure("the caller may no longer send");
      }
      if (Long.compareUnsigned(seq, p.next) < 0) {
        Entry entry = p.journal.get(seq);
        if (Arrays.equals(entry.command, bytes)) {
          return new Decided(entry.outcome, true);
        }
        throw QueryCode.NAMESPACE_CONFLICT.failure("different bytes at a used sequence");
      }
      if (seq != p.next) {
        throw QueryCode.SEQUENCE_GAP.failure("ahead of the next expected sequence")
            .with("expected_sequence", Unsigned.u64(p.next));
      }
      CommandOutcome outcome = apply(p, command, bytes);
      p.journal.put(seq, new Entry(bytes, outcome));
      p.next = seq + 1;
      if (fault == Fault.AFTER_RECORD && faultSequence == seq) {
        fault = null;
        throw GatewayException.of(Cause.UNKNOWN_OUTCOME, "native.unknown", "lost after recording");
      }
      return new Decided(outcome, false);
    }
  }

  private CommandOutcome apply(Principal p, NativeCommand c, byte[] bytes) {
    CommandOutcome.Builder out =
        CommandOutcome.newBuilder()
            .setPrincipal(c.getPrincipal())
            .setSequence(c.getSequence())
            .setCommandSha256(ByteString.copyFrom(Digests.sha256(bytes)));
    List<Long> key = List.of(c.getPrincipal(), c.getNamespace());
    Upload upload = uploads.get(key);
    String problem;
    switch (c.getBodyCase()) {
      case BEGIN -> {
        problem = c.getNamespace() != c.getSequence() ? "namespace is not the first sequence" : null;
        if (problem == null) {
          uploads.put(key, new Upload(c));
        }
      }
      case PART -> {
        problem = upload == null || upload.sealed || c.getPart().getIndex() != upload.parts
            ? "part out of order" : null;
        if (problem == null) {
          upload.data.writeBytes(c.getPart().getData().toByteArray());
          upload.parts++;
        }
      }
      case SEAL -> {
        problem = upload == null || !sealable(upload, c) ? "upload incomplete or digest differs" : null;
        if (problem == null) {
          upload.sealed = true;
        }
      }
      case SUBMIT -> {
        problem = upload == null || !upload.sealed ? "upload not sealed" : null;
        if (problem == null) {
          return submit(p, c, upload, out);
        }
      }
      default -> problem = "no command body";
    }
    if (problem != null) {
      return out.setKind(CommandOutcome.Kind.REJECTED)
          .setCode(QueryCode.INVALID_COMMAND.code())
          .setMessage(problem)
          .build();
    }
    return out.setKind(CommandOutcome.Kind.ACCEPTED).build();
  }

  private static boolean sealable(Upload u, NativeCommand seal) {
    byte[] data = u.data.toByteArray();
    ByteString digest = ByteString.copyFrom(Digests.sha256(data));
    return u.parts == u.begin.getBegin().getPartCount()
        && data.length == u.begin.getBegin().getBundleBytes()
        && digest.equals(u.begin.getBegin().getBundleSha256())
        && digest.equals(seal.getSeal().getBundleSha256());
  }

  private CommandOutcome submit(
      Principal p, NativeCommand c, Upload upload, CommandOutcome.Builder out) {
    byte[] data = upload.data.toByteArray();
    RequestBundle bundle;
    try {
      bundle = RequestBundle.parseFrom(data);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(e);
    }
    PrincipalProof proof = bundle.getProof();
    boolean proofOk =
        proof.getPrincipal() == c.getPrincipal()
            && proof.getQuerySha256().equals(
                ByteString.copyFrom(Digests.sha256(bundle.getSql().toByteArray())))
            && NativeSignatures.verifyProof(proof, p.key);
    if (!proofOk || proof.getCredentialEpoch() != p.epoch) {
      return out.setKind(CommandOutcome.Kind.REJECTED)
          .setCode(QueryCode.ACCESS_DENIED.code())
          .setMessage(proofOk ? "stale credential epoch" : "invalid principal proof")
          .build();
    }
    long correlation = nextCorrelation++;
    executions++;
    queries.put(
        correlation,
        new Query(bundle, c.getPrincipal(), c.getNamespace(), Digests.sha256(data)));
    statuses.put(
        correlation,
        QueryStatus.newBuilder()
            .setCorrelation(correlation)
            .setPrincipal(c.getPrincipal())
            .setNamespace(c.getNamespace())
            .setState(QueryStatus.State.ACCEPTED)
            .build());
    if (!hold) {
      finish(correlation);
    }
    return out.setKind(CommandOutcome.Kind.ACCEPTED).setCorrelation(correlation).build();
  }

  /** The trivial execution: one row per declared column, within max_result_rows. */
  private void finish(long correlation) {
    Query q = queries.get(correlation);
    QueryStatus.Builder status = statuses.get(correlation).toBuilder();
    long rows = q.bundle.getTable().getColumnsCount();
    if (rows > q.bundle.getBudgets().getMaxResultRows()) {
      status.setState(QueryStatus.State.FAILED)
          .setCode(QueryCode.BUDGET_EXHAUSTED.code())
          .setStage("execution")
          .setMessage("result rows exceed max_result_rows")
          .setBound("max_result_rows")
          .setLimit(q.bundle.getBudgets().getMaxResultRows())
          .setRequired(rows);
    } else {
      PrincipalProof proof = q.bundle.getProof();
      byte[] manifest =
          DeterministicProto.bytes(
              ResultManifest.newBuilder()
                  .setVersion(1)
                  .setCorrelation(correlation)
                  .setPrincipal(q.principal)
                  .setHasRole(proof.getHasRole())
                  .setRole(proof.getRole())
                  .setNamespace(q.namespace)
                  .setBundleSha256(ByteString.copyFrom(q.bundleSha256))
                  .setDeclarationSha256(q.bundle.getDeclarationSha256())
                  .setSource(q.bundle.getTable().getSource())
                  .setResource(q.bundle.getTable().getObjectId())
                  .setTotalRows(rows)
                  .build());
      manifests.put(correlation, manifest);
      status.setState(QueryStatus.State.SUCCEEDED)
          .setManifestSha256(ByteString.copyFrom(Digests.sha256(manifest)))
          .setTotalRows(rows);
    }
    statuses.put(correlation, status.build());
  }

  private void checkAccess(ReadAccess access, long correlation) {
    Query q = queries.get(correlation);
    PrincipalProof proof = q == null ? null : q.bundle.getProof();
    if (q == null
        || access.principal() != q.principal
        || access.hasRole() != proof.getHasRole()
        || access.role() != proof.getRole()
        || access.source() != q.bundle.getTable().getSource()) {
      throw QueryCode.ACCESS_DENIED.failure("no read access to this query");
    }
  }

  /** This test engine's identity (its basis in diagnostics). */
  static final io.transit.flight.nativequery.EngineIdentity IDENTITY =
      new io.transit.flight.nativequery.EngineIdentity("transit-in-memory", "test");

  @Override
  public io.transit.flight.nativequery.EngineIdentity engineIdentity() {
    return IDENTITY;
  }

  /** Admission never plans: it sends bytes. Statements compile as the compiler says. */
  @Override
  public Planner planner() {
    return QueryCompiler::compile;
  }

  /**
   * This double models registration only (no sources or publications): an unregistered
   * principal is denied, as the engine denies it.
   */
  @Override
  public void checkAccess(ReadAccess access, TableDeclaration table, AccessUse use) {
    synchronized (lock) {
      if (!principals.containsKey(access.principal())) {
        throw QueryCode.ACCESS_DENIED.failure("the principal is not registered");
      }
    }
  }

  @Override
  public long nextSequence(long principal) {
    synchronized (lock) {
      return principals.get(principal).next;
    }
  }

  @Override
  public QueryStatus awaitQuery(ReadAccess access, long correlation, long deadlineNanos)
      throws InterruptedException {
    synchronized (lock) {
      checkAccess(access, correlation);
      if (awaitFailure != null) {
        RuntimeException e = awaitFailure;
        awaitFailure = null;
        throw e;
      }
      while (statuses.get(correlation).getState() == QueryStatus.State.ACCEPTED) {
        long remaining = deadlineNanos - System.nanoTime();
        if (remaining <= 0) {
          break;
        }
        TimeUnit.NANOSECONDS.timedWait(lock, remaining);
      }
      return statuses.get(correlation);
    }
  }

  @Override
  public byte[] readManifest(ReadAccess access, long correlation) {
    synchronized (lock) {
      checkAccess(access, correlation);
      byte[] manifest = manifests.get(correlation);
      if (manifest == null) {
        throw QueryCode.SOURCE_UNAVAILABLE.failure("the query has no retained manifest");
      }
      return manifest.clone();
    }
  }

  @Override
  public byte[] readSegment(ReadAccess access, long correlation, int index, long maxBytes) {
    throw new UnsupportedOperationException("the admission test double retains no segments");
  }

  @Override
  public void close() {}
}
