package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.transit.flight.proto.QueryStatus;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@link JournalStore} contract, run against every implementation (a subclass per store):
 * what the engine relies on, row by row, and the transaction's atomicity and durability.
 */
public abstract class JournalStoreContract {
  private static final long ANY = 0xF00DL;
  /** 2^64-1: unsigned ids travel as their signed bit patterns. */
  private static final long MAX_U64 = -1L;

  protected JournalStore journal;

  /** A fresh, empty journal. */
  protected abstract JournalStore openFresh() throws Exception;

  /** The same journal as the last {@link #openFresh()}, opened again after a close. */
  protected abstract JournalStore reopen() throws Exception;

  /** The rows of {@code table} in the last {@link #openFresh()}'s journal, read directly. */
  protected abstract long rows(String table) throws Exception;

  @BeforeEach
  void open() throws Exception {
    journal = openFresh();
  }

  @AfterEach
  void close() throws Exception {
    if (journal != null) {
      journal.close();
    }
  }

  protected static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void absentPrincipalStartsAtFirstAndKeepsWhatIsSet() throws Exception {
    assertEquals(5, journal.transaction(() -> journal.nextSequence(ANY, 5)));
    journal.transaction(() -> {
      assertEquals(5, journal.nextSequence(MAX_U64, 5));
      journal.setNextSequence(MAX_U64, 9);
      return null;
    });
    assertEquals(9, journal.transaction(() -> journal.nextSequence(MAX_U64, 5)));
    journal.transaction(() -> {
      journal.setNextSequence(MAX_U64, -2L);
      return null;
    });
    assertEquals(-2L, journal.transaction(() -> journal.nextSequence(MAX_U64, 5)));
  }

  @Test
  void failedWorkLeavesNothingBehind() throws Exception {
    IllegalStateException thrown = assertThrows(IllegalStateException.class,
        () -> journal.transaction(() -> {
          journal.nextSequence(7, 1);
          journal.recordCommand(7, 1, 1, bytes("sha"), bytes("outcome"));
          journal.setNextSequence(7, 2);
          journal.beginUpload(7, 1, 10, 1, bytes("bundle"), 0);
          throw new IllegalStateException("the decision failed");
        }));
    assertEquals("the decision failed", thrown.getMessage());
    journal.transaction(() -> {
      assertEquals(1, journal.nextSequence(7, 1));
      assertTrue(journal.command(7, 1).isEmpty());
      assertTrue(journal.upload(7, 1).isEmpty());
      return null;
    });
  }

  @Test
  void aSequenceIsRecordedOnceAndTheLoserRollsBackWhole() throws Exception {
    journal.transaction(() -> {
      journal.recordCommand(MAX_U64, MAX_U64 - 1, MAX_U64 - 1, bytes("first"), bytes("outcome-1"));
      return null;
    });
    assertThrows(SQLException.class, () -> journal.transaction(() -> {
      journal.setNextSequence(MAX_U64, 77);
      journal.recordCommand(MAX_U64, MAX_U64 - 1, MAX_U64 - 1, bytes("second"), bytes("outcome-2"));
      return null;
    }));
    JournalStore.Recorded r = journal.transaction(() -> journal.command(MAX_U64, MAX_U64 - 1))
        .orElseThrow();
    assertArrayEquals(bytes("first"), r.commandSha256());
    assertArrayEquals(bytes("outcome-1"), r.outcome());
    assertEquals(3, journal.transaction(() -> journal.nextSequence(MAX_U64, 3)),
        "the loser's setNextSequence rolled back with it");
    assertTrue(journal.transaction(() -> journal.command(MAX_U64, 1)).isEmpty());
  }

  @Test
  void aTransactionReadsWhatItWroteBeforeItCommits() throws Exception {
    // The shared journal holds writes back until a read; each read must still see them.
    List<Object> seen = journal.transaction(() -> {
      List<Object> out = new ArrayList<>();
      journal.setNextSequence(5, 40);
      out.add(journal.nextSequence(5, 1));
      journal.beginUpload(5, 50, 4, 2, bytes("sha"), 0);
      journal.addPart(5, 50, 0, bytes("ab"));
      journal.addPart(5, 50, 1, bytes("cd"));
      journal.setUploadState(5, 50, JournalStore.UploadState.SEALED);
      JournalStore.Upload u = journal.upload(5, 50).orElseThrow();
      out.add(u.receivedParts() + "/" + u.receivedBytes() + "/" + u.state());
      out.add(new String(journal.assembled(5, 50), StandardCharsets.UTF_8));
      journal.recordCommand(5, 39, 39, bytes("cmd"), bytes("outcome"));
      out.add(new String(journal.command(5, 39).orElseThrow().outcome(), StandardCharsets.UTF_8));
      long c = journal.allocateCorrelation();
      journal.insertAccepted(c, 5, 50, bytes("sha"));
      out.add(journal.query(c).orElseThrow().status().getState());
      journal.storeInline(c, 0, bytes("seg"));
      out.add(new String(journal.inlineSegment(c, 0).orElseThrow(), StandardCharsets.UTF_8));
      out.add(journal.release(c));
      out.add(journal.inlineSegment(c, 0).isPresent());
      return out;
    });
    assertEquals(List.of(40L, "2/4/SEALED", "abcd", "outcome", QueryStatus.State.ACCEPTED, "seg",
        true, false), seen);
  }

  @Test
  void uploadAssemblesPartsInIndexOrderAndCountsThem() throws Exception {
    journal.transaction(() -> {
      assertTrue(journal.upload(3, 30).isEmpty());
      journal.beginUpload(3, 30, 9, 3, bytes("sha-of-bundle"), 0);
      return null;
    });
    for (int i : new int[] {2, 0, 1}) {
      journal.transaction(() -> {
        journal.addPart(3, 30, i, bytes("p" + i + "x".repeat(i)));
        return null;
      });
    }
    JournalStore.Upload u = journal.transaction(() -> journal.upload(3, 30)).orElseThrow();
    assertEquals(9, u.declaredBytes());
    assertEquals(3, u.partCount());
    assertArrayEquals(bytes("sha-of-bundle"), u.bundleSha256());
    assertEquals(3, u.receivedParts());
    assertEquals(2 + 3 + 4, u.receivedBytes());
    assertEquals(JournalStore.UploadState.OPEN, u.state());
    assertArrayEquals(bytes("p0p1xp2xx"), journal.transaction(() -> journal.assembled(3, 30)));
    assertThrows(SQLException.class, () -> journal.transaction(() -> {
      journal.addPart(3, 30, 1, bytes("again"));
      return null;
    }), "a part index is stored once");
    journal.transaction(() -> {
      journal.setUploadState(3, 30, JournalStore.UploadState.SEALED);
      return null;
    });
    JournalStore.Upload sealed = journal.transaction(() -> journal.upload(3, 30)).orElseThrow();
    assertEquals(JournalStore.UploadState.SEALED, sealed.state());
    assertEquals(3, sealed.receivedParts(), "the refused part changed no counter");
    assertArrayEquals(new byte[0], journal.transaction(() -> journal.assembled(3, 31)));
  }

  @Test
  void theSweepsLiveManifestsLeaveOutInlineAndEmptyResultsAndComeInPages() throws Exception {
    // Five results: stored, inline, empty (no rows, so no segment), stored, stored.
    long[] c = new long[5];
    for (int i = 0; i < c.length; i++) {
      long ns = i;
      c[i] = journal.transaction(() -> {
        long n = journal.allocateCorrelation();
        journal.insertAccepted(n, 1, ns, bytes("bundle-" + ns));
        return n;
      });
    }
    byte[][] manifests = new byte[c.length][];
    journal.transaction(() -> {
      for (int i = 0; i < c.length; i++) {
        manifests[i] = bytes("manifest-" + i);
        QueryStatus s = QueryStatus.newBuilder().setCorrelation(c[i]).setPrincipal(1)
            .setNamespace(i).setState(QueryStatus.State.SUCCEEDED).setTotalRows(i == 2 ? 0 : 1)
            .setManifestSha256(ByteString.copyFrom(new byte[32])).build();
        assertTrue(journal.finish(s, bytes("bundle-" + i), manifests[i], i == 2 ? 0 : 100,
            1_000 + i, 0));
      }
      journal.storeInline(c[1], 0, bytes("segment"));
      return null;
    });
    assertEquals(400, journal.transaction(journal::retainedBytes), "all but the empty one count");
    List<Long> stored = List.of(c[0], c[3], c[4]);
    assertEquals(stored, correlations(journal.transaction(() ->
        journal.liveManifests(Long.MIN_VALUE, 10))), "neither inline nor empty names a file");
    List<JournalStore.LiveManifest> aside = journal.liveManifestsAside(Long.MIN_VALUE, 10);
    assertEquals(stored, correlations(aside));
    assertArrayEquals(manifests[3], aside.get(1).manifest());
    // Pages continue after the last correlation of the one before.
    List<JournalStore.LiveManifest> first = journal.liveManifestsAside(Long.MIN_VALUE, 2);
    assertEquals(List.of(c[0], c[3]), correlations(first));
    assertEquals(List.of(c[4]), correlations(journal.transaction(() ->
        journal.liveManifests(first.get(1).correlation(), 2))));
    assertTrue(journal.transaction(() -> journal.release(c[0])));
    assertEquals(List.of(c[3], c[4]), correlations(journal.liveManifestsAside(Long.MIN_VALUE, 10)));
  }

  private static List<Long> correlations(List<JournalStore.LiveManifest> page) {
    return page.stream().map(JournalStore.LiveManifest::correlation).toList();
  }

  @Test
  void correlationsIncreaseAndQueriesMoveFromAcceptedToTerminal() throws Exception {
    List<Long> correlations = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      long ns = i;
      correlations.add(journal.transaction(() -> {
        long c = journal.allocateCorrelation();
        journal.insertAccepted(c, MAX_U64, ns, bytes("bundle-" + ns));
        return c;
      }));
    }
    for (int i = 1; i < correlations.size(); i++) {
      assertTrue(Long.compareUnsigned(correlations.get(i - 1), correlations.get(i)) < 0,
          "correlations increase: " + correlations);
    }
    assertEquals(correlations, journal.transaction(() -> journal.expiredLeases(Long.MAX_VALUE, 100)));

    long ok = correlations.get(0);
    long failed = correlations.get(1);
    byte[] manifest = bytes("manifest-bytes");
    QueryStatus succeeded = QueryStatus.newBuilder().setCorrelation(ok)
        .setPrincipal(MAX_U64).setNamespace(0).setState(QueryStatus.State.SUCCEEDED)
        .setTotalRows(12)
        .setManifestSha256(ByteString.copyFrom(new byte[32])).build();
    QueryStatus failure = QueryStatus.newBuilder().setCorrelation(failed)
        .setPrincipal(MAX_U64).setNamespace(1).setState(QueryStatus.State.FAILED).setCode("query.budget_exhausted")
        .setStage("execution").setMessage("over the row budget").setLimit(10).setRequired(11)
        .setColumn("big").build();
    journal.transaction(() -> {
      assertTrue(journal.finish(succeeded, bytes("bundle-0"), manifest, 4096, 1_000, 0));
      assertTrue(journal.finish(failure, bytes("bundle-1"), null, 0, 2_000, 0));
      return null;
    });
    // A terminal status is final: a second finish of the same query changes nothing.
    assertFalse(journal.transaction(() ->
        journal.finish(failure.toBuilder().setCorrelation(ok).setNamespace(0).build(),
            bytes("bundle-0"), null, 0, 3_000, 0)));

    JournalStore.SavedQuery s = journal.transaction(() -> journal.query(ok)).orElseThrow();
    assertEquals(QueryStatus.State.SUCCEEDED, s.status().getState());
    assertEquals(MAX_U64, s.status().getPrincipal());
    assertEquals(0, s.status().getNamespace());
    assertEquals(12, s.status().getTotalRows());
    assertEquals(32, s.status().getManifestSha256().size());
    assertArrayEquals(manifest, s.manifest());
    assertArrayEquals(bytes("bundle-0"), s.bundleSha256());
    assertFalse(s.released());

    JournalStore.SavedQuery f = journal.transaction(() -> journal.query(failed)).orElseThrow();
    assertEquals(failure, f.status());
    assertNull(f.manifest());
    assertTrue(journal.transaction(() -> journal.query(0x7777L)).isEmpty());

    assertEquals(correlations.subList(2, 5), journal.transaction(() -> journal.expiredLeases(Long.MAX_VALUE, 100)));
    List<JournalStore.Retained> retained = journal.transaction(() -> journal.oldestRetained(10));
    assertEquals(List.of(new JournalStore.Retained(ok, 1_000, 4096)), retained);
    assertEquals(4096, journal.transaction(journal::retainedBytes));
    assertEquals(4096, journal.retainedBytesAside(), "the sweep's sum, read outside a transaction");
    List<JournalStore.LiveManifest> live =
        journal.transaction(() -> journal.liveManifests(Long.MIN_VALUE, 10));
    assertEquals(1, live.size());
    assertArrayEquals(manifest, live.get(0).manifest());
    List<JournalStore.LiveManifest> aside = journal.liveManifestsAside(Long.MIN_VALUE, 10);
    assertEquals(1, aside.size(), "the sweep's manifest read, outside a transaction");
    assertArrayEquals(manifest, aside.get(0).manifest());

    assertTrue(journal.transaction(() -> journal.release(ok)));
    assertFalse(journal.transaction(() -> journal.release(0x7777L)));
    assertTrue(journal.transaction(() -> journal.query(ok)).orElseThrow().released());
    assertTrue(journal.transaction(() -> journal.oldestRetained(10)).isEmpty());
    assertEquals(0, journal.transaction(journal::retainedBytes));
    assertEquals(0, journal.retainedBytesAside());
    assertTrue(journal.transaction(() -> journal.liveManifests(Long.MIN_VALUE, 10)).isEmpty());
    assertTrue(journal.liveManifestsAside(Long.MIN_VALUE, 10).isEmpty());
  }

  @Test
  void onlyFinishedReleasedOrFailedStatementsPastTheCutoffAreForgottenAndTheirRowsGoWhole()
      throws Exception {
    // Four statements of principal 7 finished at 1,000 (released), 1,500 (failed), 2,000
    // (released) and 1,200 (succeeded, still retained); one more still running.
    long principal = 7;
    long[] at = {1_000, 1_500, 2_000, 1_200};
    long[] c = new long[at.length + 1];
    for (int i = 0; i < c.length; i++) {
      long ns = 100 + 10L * i;
      c[i] = journal.transaction(() -> {
        journal.beginUpload(principal, ns, 3, 1, bytes("digest"), 0);
        journal.addPart(principal, ns, 0, bytes("abc"));
        journal.recordCommand(principal, ns, ns, bytes("sha-" + ns), bytes("outcome"));
        journal.setNextSequence(principal, ns + 1);
        long n = journal.allocateCorrelation();
        journal.insertAccepted(n, principal, ns, bytes("digest"));
        return n;
      });
    }
    journal.transaction(() -> {
      for (int i = 0; i < at.length; i++) {
        QueryStatus.Builder s = QueryStatus.newBuilder().setCorrelation(c[i])
            .setPrincipal(principal).setNamespace(100 + 10L * i);
        if (i == 1) {
          s.setState(QueryStatus.State.FAILED).setCode("query.budget_exhausted");
          assertTrue(journal.finish(s.build(), bytes("digest"), null, 0, at[i], 0));
        } else {
          s.setState(QueryStatus.State.SUCCEEDED)
              .setManifestSha256(ByteString.copyFrom(new byte[32]));
          assertTrue(journal.finish(s.build(), bytes("digest"), bytes("m"), 10, at[i], 0));
        }
      }
      journal.storeInline(c[0], 0, bytes("segment"));
      assertTrue(journal.release(c[0]));
      assertTrue(journal.release(c[2]));
      return null;
    });
    assertEquals(Set.of(new JournalStore.Finished(c[0], principal, 100),
            new JournalStore.Finished(c[1], principal, 110)),
        new HashSet<>(journal.transaction(() -> journal.finishedBefore(1_600, 10))),
        "released or failed, and before the cutoff");
    assertEquals(1, journal.transaction(() -> journal.finishedBefore(1_600, 1)).size());
    assertEquals(3, journal.transaction(() -> journal.finishedBefore(Long.MAX_VALUE, 10)).size(),
        "never a retained result nor a running query");

    long next = journal.transaction(() -> journal.nextSequence(principal, 1));
    journal.transaction(JournalStore.Durability.DEFERRED, () -> {
      journal.forget(new JournalStore.Finished(c[0], principal, 100));
      journal.forgetCommand(principal, 100);
      journal.forgetCommand(principal, 101); // none there: nothing happens
      return null;
    });
    journal.transaction(() -> {
      assertTrue(journal.query(c[0]).isEmpty());
      assertTrue(journal.upload(principal, 100).isEmpty());
      assertEquals(0, journal.assembled(principal, 100).length);
      assertTrue(journal.command(principal, 100).isEmpty());
      assertTrue(journal.inlineSegment(c[0], 0).isEmpty());
      // The neighbours are untouched, and the next sequence stays where it was.
      assertTrue(journal.query(c[1]).isPresent());
      assertArrayEquals(bytes("abc"), journal.assembled(principal, 110));
      assertTrue(journal.command(principal, 110).isPresent());
      assertEquals(next, journal.nextSequence(principal, 1));
      return null;
    });
    assertEquals(List.of(new JournalStore.Finished(c[1], principal, 110)),
        journal.transaction(() -> journal.finishedBefore(1_600, 10)));
  }

  @Test
  void unsubmittedUploadsPastTheCutoffAreListedOldestFirstAndTheirNamedRecordsGo()
      throws Exception {
    // Principal 9: an open upload begun at 1,000 (begin at 20, its part at 21), a sealed one
    // begun at 1,100 whose submit was rejected (30..33), a submitted one begun at 900 (40), and
    // an open one begun at 5,000 (50). Sequence 22 holds another namespace's command.
    long principal = 9;
    journal.transaction(() -> {
      journal.lockPrincipal(principal); // a principal without a row yet: nothing to wait for
      journal.beginUpload(principal, 20, 6, 2, bytes("d20"), 1_000);
      journal.addPart(principal, 20, 0, bytes("abc"));
      journal.recordCommand(principal, 20, 20, bytes("b20"), bytes("o"));
      journal.recordCommand(principal, 21, 20, bytes("p20"), bytes("o"));
      journal.recordCommand(principal, 22, 90, bytes("x90"), bytes("o"));
      journal.beginUpload(principal, 30, 3, 1, bytes("d30"), 1_100);
      journal.addPart(principal, 30, 0, bytes("abc"));
      journal.setUploadState(principal, 30, JournalStore.UploadState.SEALED);
      for (long s = 30; s <= 33; s++) {
        journal.recordCommand(principal, s, 30, bytes("c" + s), bytes("o"));
      }
      journal.beginUpload(principal, 40, 3, 1, bytes("d40"), 900);
      journal.setUploadState(principal, 40, JournalStore.UploadState.SUBMITTED);
      journal.beginUpload(principal, 50, 3, 1, bytes("d50"), 5_000);
      journal.setNextSequence(principal, 60);
      return null;
    });
    assertEquals(List.of(new JournalStore.Abandoned(principal, 20),
            new JournalStore.Abandoned(principal, 30)),
        journal.transaction(() -> journal.abandonedBefore(2_000, 10)),
        "unsubmitted, begun before the cutoff, oldest first");
    assertEquals(List.of(new JournalStore.Abandoned(principal, 20)),
        journal.transaction(() -> journal.abandonedBefore(2_000, 1)));

    journal.transaction(JournalStore.Durability.DEFERRED, () -> {
      journal.lockPrincipal(principal);
      for (long s = 20; s <= 23; s++) {
        journal.forgetCommand(principal, s, 20);
      }
      journal.forgetUpload(principal, 20);
      return null;
    });
    journal.transaction(() -> {
      assertTrue(journal.upload(principal, 20).isEmpty());
      assertEquals(0, journal.assembled(principal, 20).length);
      assertTrue(journal.command(principal, 20).isEmpty());
      assertTrue(journal.command(principal, 21).isEmpty());
      assertTrue(journal.command(principal, 22).isPresent(), "another namespace's record stays");
      assertTrue(journal.upload(principal, 30).isPresent());
      assertEquals(60, journal.nextSequence(principal, 1));
      return null;
    });
    assertEquals(List.of(new JournalStore.Abandoned(principal, 30)),
        journal.transaction(() -> journal.abandonedBefore(2_000, 10)));
  }

  @Test
  void refusalsPastTheCutoffGoOldestFirstAPageAtATimeAndAcceptedRecordsStay() throws Exception {
    // Principal 12: an accepted record (1), refusals decided at 300 (2), 100 (3) and 200 (4) —
    // one naming no upload, one a namespace beyond any chain — and a young refusal at 5,000 (5).
    long principal = 12;
    journal.transaction(() -> {
      journal.recordCommand(principal, 1, 1, bytes("a1"), bytes("accepted"));
      journal.recordRefusal(principal, 2, 77, bytes("r2"), bytes("refused"), 300);
      journal.recordRefusal(principal, 3, 3, bytes("r3"), bytes("refused"), 100);
      journal.recordRefusal(principal, 4, 1, bytes("r4"), bytes("refused"), 200);
      journal.recordRefusal(principal, 5, 5, bytes("r5"), bytes("refused"), 5_000);
      journal.setNextSequence(principal, 6);
      return null;
    });
    assertEquals(1, (int) journal.transaction(() -> journal.forgetRefusedBefore(1_000, 1)));
    journal.transaction(() -> {
      assertTrue(journal.command(principal, 3).isEmpty(), "the oldest refusal first");
      assertTrue(journal.command(principal, 4).isPresent());
      assertArrayEquals(bytes("refused"), journal.command(principal, 2).orElseThrow().outcome());
      return null;
    });
    assertEquals(2, (int) journal.transaction(() -> journal.forgetRefusedBefore(1_000, 10)));
    assertEquals(0, (int) journal.transaction(() -> journal.forgetRefusedBefore(1_000, 10)));
    journal.transaction(() -> {
      assertTrue(journal.command(principal, 2).isEmpty());
      assertTrue(journal.command(principal, 4).isEmpty());
      assertArrayEquals(bytes("accepted"), journal.command(principal, 1).orElseThrow().outcome(),
          "an accepted record is not the refusals' to forget");
      assertTrue(journal.command(principal, 5).isPresent(), "a refusal younger than the cutoff");
      assertEquals(6, journal.nextSequence(principal, 1));
      return null;
    });
  }

  @Test
  void retainedIsOldestFirst() throws Exception {
    long[] finished = {3_000, 1_000, 2_000};
    List<Long> cs = new ArrayList<>();
    for (long at : finished) {
      long c = journal.transaction(() -> {
        long n = journal.allocateCorrelation();
        journal.insertAccepted(n, 1, at, bytes("b"));
        journal.finish(QueryStatus.newBuilder().setCorrelation(n).setPrincipal(1).setNamespace(at)
            .setState(QueryStatus.State.SUCCEEDED)
            .setManifestSha256(ByteString.copyFrom(new byte[32])).build(), bytes("b"), bytes("m"),
            at, at, 0);
        return n;
      });
      cs.add(c);
    }
    List<Long> order = new ArrayList<>();
    for (JournalStore.Retained r : journal.transaction(() -> journal.oldestRetained(10))) {
      order.add(r.correlation());
    }
    assertEquals(List.of(cs.get(1), cs.get(2), cs.get(0)), order);
    // A page is the oldest ones; once they are released the next page starts after them.
    assertEquals(List.of(cs.get(1), cs.get(2)), journal.transaction(() -> journal.oldestRetained(2))
        .stream().map(JournalStore.Retained::correlation).toList());
    journal.transaction(() -> journal.release(cs.get(1)));
    assertEquals(List.of(cs.get(2), cs.get(0)), journal.transaction(() -> journal.oldestRetained(2))
        .stream().map(JournalStore.Retained::correlation).toList());
  }

  @Test
  void everyCommitIsObservedAndRollbacksAreNot() throws Exception {
    AtomicInteger commits = new AtomicInteger();
    journal.observeCommits(nanos -> {
      assertTrue(nanos >= 0);
      commits.incrementAndGet();
    });
    journal.transaction(() -> journal.nextSequence(1, 1));
    journal.transaction(() -> journal.command(1, 1));
    assertThrows(IllegalArgumentException.class, () -> journal.transaction(() -> {
      throw new IllegalArgumentException("no");
    }));
    assertEquals(2, commits.get());
  }

  @Test
  void committedWorkSurvivesAReopen() throws Exception {
    long c = journal.transaction(() -> {
      journal.nextSequence(11, 1);
      journal.recordCommand(11, 1, 1, bytes("sha"), bytes("outcome"));
      journal.setNextSequence(11, 2);
      journal.beginUpload(11, 5, 3, 1, bytes("b"), 0);
      journal.addPart(11, 5, 0, bytes("abc"));
      long n = journal.allocateCorrelation();
      journal.insertAccepted(n, 11, 5, bytes("b"));
      return n;
    });
    journal.close();
    journal = null;
    journal = reopen();
    assertEquals(2, journal.transaction(() -> journal.nextSequence(11, 1)));
    assertArrayEquals(bytes("outcome"),
        journal.transaction(() -> journal.command(11, 1)).orElseThrow().outcome());
    assertArrayEquals(bytes("abc"), journal.transaction(() -> journal.assembled(11, 5)));
    assertEquals(List.of(c), journal.transaction(() -> journal.expiredLeases(Long.MAX_VALUE, 100)));
    long next = journal.transaction(journal::allocateCorrelation);
    assertTrue(Long.compareUnsigned(c, next) < 0, "no correlation is handed out twice");
    Set<Long> seen = new HashSet<>(List.of(c, next));
    assertEquals(2, seen.size());
  }

  @Test
  void leasesExcludeOtherOwnersUntilExpiryAndAnOlderAttemptCannotFinish() throws Exception {
    long q = journal.transaction(() -> {
      long n = journal.allocateCorrelation();
      journal.insertAccepted(n, 21, 1, bytes("b"));
      return n;
    });
    // Never claimed: expired for every scan.
    assertEquals(List.of(q), journal.transaction(() -> journal.expiredLeases(0, 10)));
    assertEquals(1L, journal.transaction(() -> journal.claim(q, 100, "a/1", 1_000, 11_000))
        .orElseThrow());
    assertTrue(journal.transaction(() -> journal.expiredLeases(10_999, 10)).isEmpty());
    // Another owner before expiry: refused; the holder itself may claim again.
    assertTrue(journal.transaction(() -> journal.claim(q, 200, "b/2", 5_000, 15_000)).isEmpty());
    assertTrue(journal.transaction(() -> journal.renew(q, 100, 1, 20_000)));
    assertTrue(journal.transaction(() -> journal.claim(q, 200, "b/2", 19_999, 30_000)).isEmpty());
    // Past expiry another owner takes it over: attempt 2 fences attempt 1.
    assertEquals(List.of(q), journal.transaction(() -> journal.expiredLeases(20_000, 10)));
    assertEquals(2L, journal.transaction(() -> journal.claim(q, 200, "b/2", 20_000, 30_000))
        .orElseThrow());
    assertFalse(journal.transaction(() -> journal.renew(q, 100, 1, 40_000)));
    QueryStatus done = QueryStatus.newBuilder().setCorrelation(q).setPrincipal(21).setNamespace(1)
        .setState(QueryStatus.State.SUCCEEDED)
        .setManifestSha256(ByteString.copyFrom(new byte[32])).build();
    assertFalse(journal.transaction(() -> journal.finish(done, bytes("b"), bytes("m1"), 1, 21_000,
        1)));
    assertTrue(journal.transaction(() -> journal.finish(done, bytes("b"), bytes("m2"), 1, 22_000,
        2)));
    assertArrayEquals(bytes("m2"), journal.transaction(() -> journal.query(q)).orElseThrow()
        .manifest());
    // Terminal: no claim, no renewal, not expired.
    assertTrue(journal.transaction(() -> journal.claim(q, 300, "c/3", 99_000, 99_999)).isEmpty());
    assertFalse(journal.transaction(() -> journal.renew(q, 200, 2, 99_999)));
    assertTrue(journal.transaction(() -> journal.expiredLeases(Long.MAX_VALUE, 10)).isEmpty());
  }

  /**
   * A correlation is not a statement's identity on a shared journal: a database crash that takes
   * back a deferred submit lets the correlation sequence hand its value out again, to another
   * statement whose first claim is attempt 1 as well. A finish naming another principal,
   * namespace or bundle than the row's, even at the row's attempt, is a run of that lost
   * statement: it changes nothing, and the row's own run still publishes.
   */
  @Test
  void aFinishForAnotherStatementUnderTheSameCorrelationAndAttemptChangesNothing()
      throws Exception {
    long q = journal.transaction(() -> {
      long n = journal.allocateCorrelation();
      journal.insertAccepted(n, 31, 5, bytes("new-bundle"));
      return n;
    });
    assertEquals(1L, journal.transaction(() -> journal.claim(q, 100, "a/1", 1_000, 11_000))
        .orElseThrow());
    QueryStatus own = QueryStatus.newBuilder().setCorrelation(q).setPrincipal(31).setNamespace(5)
        .setState(QueryStatus.State.SUCCEEDED).setTotalRows(7)
        .setManifestSha256(ByteString.copyFrom(new byte[32])).build();
    for (QueryStatus stale : List.of(own.toBuilder().setPrincipal(30).build(),
        own.toBuilder().setNamespace(6).build(),
        own.toBuilder().setState(QueryStatus.State.FAILED).setPrincipal(MAX_U64).build())) {
      assertFalse(journal.transaction(() -> journal.finish(stale, bytes("new-bundle"),
          bytes("old-manifest"), 4096, 2_000, 1)), "another statement's run: "
          + stale.getPrincipal() + "/" + stale.getNamespace());
    }
    // The same principal at the same namespace with another bundle (a caller that reused the
    // namespace after an unknown outcome): still another statement's run.
    assertFalse(journal.transaction(() -> journal.finish(own, bytes("old-bundle"),
        bytes("old-manifest"), 4096, 2_000, 1)), "another bundle's run");
    JournalStore.SavedQuery saved = journal.transaction(() -> journal.query(q)).orElseThrow();
    assertEquals(QueryStatus.State.ACCEPTED, saved.status().getState());
    assertEquals(0, saved.status().getTotalRows());
    assertNull(saved.manifest());
    assertEquals(0, journal.transaction(journal::retainedBytes));
    assertEquals(List.of(q), journal.transaction(() -> journal.expiredLeases(Long.MAX_VALUE, 10)));
    assertTrue(journal.transaction(() -> journal.finish(own, bytes("new-bundle"),
        bytes("new-manifest"), 10, 3_000, 1)));
    saved = journal.transaction(() -> journal.query(q)).orElseThrow();
    assertEquals(own, saved.status());
    assertArrayEquals(bytes("new-manifest"), saved.manifest());
  }

  /** Rotations publish a version each: only the latest are kept, and the head still reads. */
  @Test
  void aPublishKeepsOnlyTheLatestRightsVersions() throws Exception {
    int published = JournalStore.RIGHTS_VERSIONS_KEPT + 5;
    for (int i = 1; i <= published; i++) {
      assertEquals(i, publish(journal, "rights-" + i));
    }
    assertEquals(JournalStore.RIGHTS_VERSIONS_KEPT, rows("rights_versions"));
    assertEquals("rights-" + published, currentDocument(journal));
    assertEquals(published, journal.readRightsEpoch());
  }

  private static long publish(JournalStore store, String document) throws SQLException {
    byte[] doc = bytes(document);
    byte[] sha;
    try {
      sha = java.security.MessageDigest.getInstance("SHA-256").digest(doc);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    return store.transaction(() -> store.publishRights(sha, doc));
  }

  private static String currentDocument(JournalStore store) throws SQLException {
    return new String(store.transaction(store::rights).orElseThrow().document(),
        StandardCharsets.UTF_8);
  }

  /**
   * Two stores on one journal (two replicas): a publish of new content advances the epoch once,
   * the same content again (from either) records nothing, and concurrent publishes neither
   * record one document twice nor lose one.
   */
  @Test
  void rightsAdvanceOneEpochPerDistinctContentAcrossStores() throws Exception {
    assertEquals(0, journal.transaction(journal::rightsEpoch));
    assertTrue(journal.transaction(journal::rights).isEmpty());
    JournalStore other = reopen();
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(8);
    try {
      assertEquals(1, publish(journal, "rights A"));
      assertEquals(1, publish(other, "rights A"), "the same content is no new version");
      assertEquals(1, other.transaction(other::rightsEpoch));
      assertEquals(2, publish(other, "rights B"));
      assertEquals(2, journal.transaction(journal::rightsEpoch), "the other store's version");
      assertEquals("rights B", currentDocument(journal));
      assertEquals(2, journal.transaction(journal::rights).orElseThrow().epoch());
      assertEquals(3, publish(journal, "rights A"), "going back is a change too");

      // Eight reloads of one new document at once, half through each store: one version.
      List<java.util.concurrent.Future<Long>> same = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        JournalStore s = i % 2 == 0 ? journal : other;
        same.add(pool.submit(() -> publish(s, "rights C")));
      }
      for (java.util.concurrent.Future<Long> f : same) {
        assertEquals(4L, f.get(60, java.util.concurrent.TimeUnit.SECONDS));
      }
      assertEquals(4, other.transaction(other::rightsEpoch));

      // Two different documents at once: both recorded, at distinct epochs, neither lost.
      java.util.concurrent.Future<Long> d = pool.submit(() -> publish(journal, "rights D"));
      java.util.concurrent.Future<Long> e = pool.submit(() -> publish(other, "rights E"));
      long de = d.get(60, java.util.concurrent.TimeUnit.SECONDS);
      long ee = e.get(60, java.util.concurrent.TimeUnit.SECONDS);
      assertEquals(Set.of(5L, 6L), Set.of(de, ee));
      assertEquals(6, journal.transaction(journal::rightsEpoch));
      assertEquals(de == 6 ? "rights D" : "rights E", currentDocument(other));
    } finally {
      pool.shutdownNow();
      other.close();
    }
  }
}
