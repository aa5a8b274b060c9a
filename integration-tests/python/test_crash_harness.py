"""Crash harness: kill -9 the daemon at random instants during a stream of statements.

Each run starts the daemon on the same state directory, streams statements from one client
(each at the next sequence its predecessor's app_metadata named), kills the daemon (SIGKILL) and
restarts it, and retries the interrupted statement with its same first sequence and SQL. The kill
falls, by turns, at a random instant; inside a mode's own window; and while a query has executed
and holds its result (inline bytes in memory, or segment files written and synced) before its one
terminal commit (docs/admission.md §10). Two modes:

- ``held``: early runs off (the execution delay pins timing); the own window is a query accepted
  but not yet executed;
- ``early``: early runs on (docs/native-engine.md, "Early runs"); the own window is a submit held
  before its record while the early run has executed the chain's bundle (and stored the
  projection's segment files): nothing of the query is recorded yet. An aggregate's result is
  ready when its submit comes, so the submit's own transaction records it (one durable commit for
  acceptance and result) and the terminal-commit kills land in the hold just before that commit
  (counted as ``killed_before_submit_with_result``). The daemon's
  ``transit_early_runs_adopted_total`` counts the statements that took an early run's result
  (printed), and a last statement after the final restart must take one.

The statements mix one-row aggregates (inline results) and a 20,000-row projection (segment
files). Then:

- queries accepted but unfinished at the kill finish after the restart with no client retry;
- the retry resolves (a namespace the journal had already accepted keeps its correlation);
- every statement of the run, and a sample of older ones, replays to its recorded correlation
  and next sequence (old first sequences keep working after newer ones were admitted), and the
  retried one and the sampled ones read back (DoGet) with their exact rows;
- the journal has exactly one query per admitted namespace, no other, all SUCCEEDED, and its
  next sequence is the one the client holds.

TRANSIT_CRASH_RUNS sets the number of runs per mode (default 6; scripts/stress-admission uses
100) and TRANSIT_CRASH_SEED the random seed (printed, so a failing schedule can be replayed).
"""

import os
import random
import threading
import time

import grpc
import pytest

from calls import channel, info_fields, next_sequence, read_result, sql_info
from daemon import Daemon, wait_until
from ops_support import metrics_port, sample, scrape

RUNS = int(os.environ.get("TRANSIT_CRASH_RUNS", "6"))
SEED = int(os.environ.get("TRANSIT_CRASH_SEED", str(time.time_ns() % 1_000_000)))
# pytest.ini's per-test bound, raised for the stress profile: a minute per kill and restart.
pytestmark = pytest.mark.timeout(max(1800, 60 * RUNS))
# Each window a mode holds open lasts this long, so kills often find a statement inside it.
HOLD_MS = 300
FAULTS = {
    # Accepted queries wait before executing and, executed, before their terminal commit.
    "held": f"execution-delay-ms:{HOLD_MS},finish-delay-ms:{HOLD_MS}",
    # Submits wait before their record (the early run executes meanwhile), and executed queries
    # before their terminal commit.
    "early": f"submit-delay-ms:{HOLD_MS},finish-delay-ms:{HOLD_MS}",
}
# The engine's lines when a query has executed and its terminal commit is held, and when a submit
# is held before its record (test faults).
HELD = "its terminal commit is held"
SUBMIT_HELD = "before its record (test fault)"
ADOPTED = "transit_early_runs_adopted_total"
PROJECTED_ROWS = 20_000  # two int64 columns: past the 64 KiB inline limit, so segment files


def sql_for(i: int) -> str:
    if i % 4 == 3:
        # A bundle above 4096 bytes: several upload parts, so more instants fall inside the upload.
        ids = ",".join(str(n) for n in range(i, i + 1100))
        return f"SELECT COUNT(*), SUM(a) FROM primitive WHERE id IN ({ids})"
    if i % 4 == 1:
        return f"SELECT id, a FROM primitive WHERE id < {PROJECTED_ROWS}"
    return f"SELECT COUNT(*), SUM(c) FROM primitive WHERE id < {1000 + i}"


def expected_rows(sql: str) -> int:
    """Rows of the statement's result: the projection's count, else one aggregate row."""
    return PROJECTED_ROWS if sql.startswith("SELECT id, a") else 1


def check_result(d, info_bytes: bytes, sql: str) -> None:
    """Reads the statement's result back (DoGet) and checks its rows."""
    rows = read_result(d, "primitive", info_bytes)
    assert len(rows) == expected_rows(sql), (sql[:60], len(rows))
    if expected_rows(sql) == 1:
        count = 1100 if " IN (" in sql else int(sql.rsplit("<", 1)[1])
        assert rows[0][0] == count, (sql[:60], rows[0])
    else:
        assert [r[0] for r in rows] == list(range(PROJECTED_ROWS))


def admit(ch, d, sql, s):
    """GetFlightInfo at S; a compile over its time budget (a cold daemon on a loaded machine) is
    RESOURCE_EXHAUSTED query.compile_timeout with nothing sent, so the same S is simply retried."""
    for attempt in range(3):
        try:
            return sql_info(ch, d, "primitive", sql, s)
        except grpc.RpcError as e:
            if attempt == 2 or "query.compile_timeout" not in (e.details() or ""):
                raise


def held(d, line_part=HELD) -> int:
    return sum(line_part in line for line in list(d.output))


def held_submit(d) -> bool:
    """Whether the latest terminal-commit hold is a submit's that records its early result (its
    commit holds the acceptance too), rather than an accepted query's."""
    return "submit at sequence" in next((l for l in reversed(list(d.output)) if HELD in l), "")


def adopted(d) -> float:
    """The running daemon's early runs adopted since it started (its latest metrics listener)."""
    return sample(scrape(metrics_port(reversed(list(d.output)))), ADOPTED)


def early_running(d) -> float:
    """The running daemon's early runs in progress now."""
    return sample(scrape(metrics_port(reversed(list(d.output)))), "transit_early_runs_running")


class Stream(threading.Thread):
    """Sends statements one after another until a call fails (the daemon was killed)."""

    def __init__(self, d, first_sequence, first_index, count_early):
        super().__init__(daemon=True)
        self.d, self.sequence, self.index = d, first_sequence, first_index
        self.count_early = count_early
        self.admitted = []  # (first sequence, sql, correlation, next sequence)
        self.pending = None  # (first sequence, sql) of the interrupted statement
        self.adopted = 0.0  # the daemon's early runs adopted, after the last admitted statement

    def run(self):
        with channel(self.d) as ch:
            while True:
                sql = sql_for(self.index)
                try:
                    correlation, meta = info_fields(sql_info(ch, self.d, "primitive", sql, self.sequence, 60))
                except grpc.RpcError:
                    self.pending = (self.sequence, sql)
                    return
                self.admitted.append((self.sequence, sql, correlation, meta["next_sequence"]))
                self.sequence, self.index = meta["next_sequence"], self.index + 1
                if self.count_early:
                    try:
                        self.adopted = adopted(self.d)
                    except OSError:
                        pass  # killed between the statement and the scrape


@pytest.mark.parametrize("mode", ["held", "early"])
def test_kill9_at_random_instants_resolves_every_statement_exactly_once(tmp_path, mode):
    print(f"crash harness ({mode}): {RUNS} runs, seed {SEED}")
    rnd = random.Random(SEED)
    early = mode == "early"
    metrics = {"ops": {"metrics": {"host": "127.0.0.1", "port": 0}}} if early else {}
    d = Daemon(Daemon.template(tmp_path / "state", **metrics), faults=FAULTS[mode])
    admitted = {}  # first sequence -> (sql, correlation, next sequence)
    figures = {"not_started": 0, "mid_upload": 0, "accepted_unfinished": 0,
               "finished_unreported": 0, "resumed": 0, "killed_before_execution": 0,
               "killed_before_terminal_commit": 0, "killed_before_submit_record": 0,
               "killed_before_submit_with_result": 0,
               "early_adopted": 0, "results_read": 0}
    # The running daemon's adopted early runs as last scraped after a restart's checks (its
    # counter starts at 0 with each daemon; the stream's scrapes continue from there).
    life_adopted = 0.0
    try:
        d.start()
        journal, principal = d.journal(), d.principal("primitive")
        with channel(d) as ch:
            expected = next_sequence(ch, d, "primitive")
        for run in range(RUNS):
            stream = Stream(d, expected, len(admitted), early)
            stream.start()
            if run % 3 == 2 and early:
                # The chain through its seal is recorded and the early run has (or is computing)
                # the result; the submit is held before its record.
                seen = held(d, SUBMIT_HELD)
                wait_until(lambda: held(d, SUBMIT_HELD) > seen, 60, "a submit held before its record")
                time.sleep(rnd.uniform(0, HOLD_MS / 1000))
                figures["killed_before_submit_record"] += 1
            elif run % 3 == 2:
                wait_until(lambda: any(st == "ACCEPTED" for _, st in journal.queries(principal).values()),
                           60, "an accepted, unfinished query")
                figures["killed_before_execution"] += 1
            elif run % 3 == 1:
                # Executed, result held, the one terminal commit (status, manifest, inline
                # segments) not yet made: the kill lands inside the hold. Early runs on, an
                # aggregate's hold is its submit's, whose commit also records the acceptance.
                seen = held(d)
                wait_until(lambda: held(d) > seen, 60, "a query holding its terminal commit")
                time.sleep(rnd.uniform(0, HOLD_MS / 2000))
                figures["killed_before_submit_with_result" if held_submit(d)
                        else "killed_before_terminal_commit"] += 1
            else:
                time.sleep(rnd.uniform(0.05, 2.0))
            d.kill9()
            stream.join(60)
            assert not stream.is_alive() and stream.pending is not None
            figures["early_adopted"] += int(max(life_adopted, stream.adopted))
            for s, sql, correlation, nxt in stream.admitted:
                admitted[s] = (sql, correlation, nxt)

            # The state the kill left, read from the journal while no daemon runs.
            s, sql = stream.pending
            before = journal.queries(principal)
            unfinished = [c for c, st in before.values() if st == "ACCEPTED"]
            if s in before:
                figures["accepted_unfinished" if before[s][1] == "ACCEPTED" else "finished_unreported"] += 1
            elif journal.next_sequence(principal) > s:
                figures["mid_upload"] += 1
            else:
                figures["not_started"] += 1

            d.start()
            # Accepted work resumes by itself, before any client retries.
            for correlation in unfinished:
                assert journal.wait_state(correlation, {"SUCCEEDED", "FAILED"}) == "SUCCEEDED"
                figures["resumed"] += 1

            with channel(d) as ch:
                retried = admit(ch, d, sql, s)
                correlation, meta = info_fields(retried)
                if s in before:
                    assert correlation == before[s][0], "the retry resolves to the accepted query"
                admitted[s] = (sql, correlation, meta["next_sequence"])
                expected = meta["next_sequence"]
                check_result(d, retried, sql)
                figures["results_read"] += 1

                older = [k for k in admitted if k not in {a[0] for a in stream.admitted} and k != s]
                sampled = rnd.sample(older, min(3, len(older)))
                for k in [a[0] for a in stream.admitted] + sampled:
                    replayed = admit(ch, d, admitted[k][0], k)
                    again, meta = info_fields(replayed)
                    assert (again, meta["next_sequence"]) == admitted[k][1:], f"replay at {k}"
                    if k in sampled:
                        check_result(d, replayed, admitted[k][0])
                        figures["results_read"] += 1

                ns = journal.queries(principal)
                assert set(ns) == set(admitted), "exactly the admitted namespaces hold a query"
                assert {ns[k][0] for k in ns} == {v[1] for v in admitted.values()}
                assert all(st == "SUCCEEDED" for _, st in ns.values())
                assert journal.next_sequence(principal) == expected == next_sequence(ch, d, "primitive")
            # Counted from here on: the retry's own early run, if it took the query, and the
            # stream's. (A retry after a kill in the submit hold re-sends a chain whose seal is a
            # replay; that its early run still runs the query is what the retry's deadline above
            # checks, and the last statement below that early runs still take queries.)
            life_adopted = adopted(d) if early else 0.0

        if early:
            # One more statement on the restarted daemon (the projection, so a stored result):
            # its early run takes its query. How many of the stream's did varies with the kills.
            # The replays above start early runs that their replayed submits abandon: once those
            # have stopped, the permit is free for this statement's.
            wait_until(lambda: early_running(d) == 0, 30, "no early run in progress")
            before = adopted(d)
            sql = sql_for(1)
            with channel(d) as ch:
                info = admit(ch, d, sql, expected)
                correlation, meta = info_fields(info)
                admitted[expected] = (sql, correlation, meta["next_sequence"])
                expected = meta["next_sequence"]
                check_result(d, info, sql)
                figures["results_read"] += 1
            wait_until(lambda: adopted(d) == before + 1, 30, "the last statement's early run taken")
            figures["early_adopted"] += int(adopted(d))
        with channel(d) as ch:
            for k, (sql, correlation, nxt) in admitted.items():
                again, meta = info_fields(admit(ch, d, sql, k))
                assert (again, meta["next_sequence"]) == (correlation, nxt)
        assert journal.query_rows() == len(admitted)
        ns = journal.queries(principal)
        figures["duplicates"] = journal.query_rows() - len(ns)
        figures["lost"] = len(set(admitted) - set(ns))
        d.assert_clean_stop()  # after every kill and restart, nothing leaked at the last stop
    finally:
        d.stop()
    print(f"crash harness figures ({mode}): runs={RUNS} statements={len(admitted)} {figures}")
    assert figures["duplicates"] == 0 and figures["lost"] == 0
    # The kills inside an accepted query's terminal-commit hold each leave it to resume (a kill
    # in a submit's hold leaves nothing of the submit: its retry decides it again).
    assert figures["resumed"] >= figures["killed_before_terminal_commit"]
    if not early:
        assert figures["killed_before_terminal_commit"] >= RUNS // 3
