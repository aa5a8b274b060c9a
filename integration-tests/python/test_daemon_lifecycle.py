"""kill -9 and restart over the same state directory: journal intact, old tickets still read,
nothing the killed process extracted left behind."""

import json
import os
import signal
import sqlite3
import threading
from pathlib import Path

import grpc

from calls import Caller, channel, failure, info_fields, next_sequence, sql_info
from daemon import ROOT, Daemon, gateway_once, wait_until, write_private


def test_kill9_restart_keeps_journal_and_tickets(tmp_path):
    d = Daemon(tmp_path / "state").start()
    try:
        c = Caller(d, "primitive")
        seq = c.next_sequence()
        info = c.info("SELECT COUNT(*), SUM(a) FROM primitive WHERE a > 7", seq)
        before = c.read(info)
        nxt = json.loads(info.app_metadata)["next_sequence"]
        # DuckDB's and SQLite's libraries load in place from the build's lib/native: nothing is
        # unpacked into the JVM's temporary directory, which is under the state directory, not
        # /tmp (JvmOptions) ...
        tmp = tmp_path / "state" / "tmp"
        assert not [p.name for p in tmp.iterdir() if ".so" in p.name]
        # ... where a driver that unpacks anyway (a build on another platform) leaves its copy
        # when killed: this stand-in is removed at the next start.
        left = tmp / "libduckdb_java1234567890.so"
        left.write_bytes(b"\x7fELF")
        d.kill9()
        d.start()
        assert not left.exists()
        c = Caller(d, "primitive")
        assert c.next_sequence() == nxt
        assert c.read(info).equals(before), "a ticket issued before the crash still reads"
        again = c.info("SELECT COUNT(*), SUM(a) FROM primitive WHERE a > 7", seq)
        assert again.endpoints[0].ticket.ticket[146:154] == info.endpoints[0].ticket.ticket[146:154]
        assert c.next_sequence() == nxt
        d.assert_clean_stop()
    finally:
        d.stop()


def test_a_state_directory_whose_path_holds_spaces_serves(tmp_path):
    # The launcher passes each JVM option the configuration asks for as one argument: the
    # temporary directory under this state directory used to split into three.
    state = tmp_path / "a state dir"
    d = Daemon(state).start()
    try:
        c = Caller(d, "primitive")
        info = c.info("SELECT COUNT(*) FROM primitive", c.next_sequence())
        assert c.read(info).num_rows == 1
        assert f"-Djava.io.tmpdir={state}/tmp" in Path(f"/proc/{d.pid}/cmdline").read_bytes() \
            .decode().split("\0")
    finally:
        d.assert_clean_stop()


def refused(state_dir):
    """Starts the daemon expecting it to refuse; returns its output."""
    r = gateway_once("demo", "--state-dir", str(state_dir), "--port", "0")
    assert r.returncode == 2, r.stdout + r.stderr
    return r.stderr


def test_refuses_readable_secrets_equal_credentials_and_bad_config(tmp_path):
    state = tmp_path / "state"
    d = Daemon(state).start()
    d.assert_clean_stop()
    key = state / "keys" / "ticket.key"
    key.chmod(0o640)
    assert "0600" in refused(state) and "ticket.key" in refused(state)
    key.chmod(0o600)
    cred = state / "credentials" / "mixed.token"
    cred.chmod(0o604)
    assert "mixed.token" in refused(state)
    cred.chmod(0o600)
    cred.write_text((state / "credentials" / "primitive.token").read_text())
    assert "equal credentials" in refused(state)
    cred.write_text("tfg_" + "x" * 40 + "\n")
    config = state / "gateway.json"
    cfg = json.loads(config.read_text())
    cfg["callers"][1]["principal"] = cfg["callers"][0]["principal"]
    config.write_text(json.dumps(cfg))
    assert "callers[1].principal" in refused(state)
    cfg = json.loads(config.read_text())
    cfg["callers"][1]["principal"] = 102
    cfg["limits"] = {"max_inbound_message_bytes": 1 << 20}
    config.write_text(json.dumps(cfg))
    assert "limits.max_inbound_message_bytes" in refused(state)
    del cfg["limits"]
    config.write_text(json.dumps(cfg))
    d = Daemon(state).start()
    d.assert_clean_stop()


def test_a_journal_lost_under_the_daemon_is_logged_and_never_replaced_by_an_empty_one(tmp_path):
    """A journal truncated under the running daemon (a bad cleanup, a damaged disk): calls get
    UNAVAILABLE query.journal_unavailable and the operator one log line with SQLite's error (at
    most one every 10 s), where until 2026-12-07 nothing was logged. Removed, it is not made
    again empty at the next start, which would admit again every statement it recorded: the
    start is refused until the operator restores it or removes engine/journal.created."""
    state = tmp_path / "state"
    d = Daemon(state).start()
    try:
        d.assert_clean_stop()
        d.start()  # over a checkpointed journal: the file holds it all, the WAL nothing
        with channel(d) as ch:
            next_sequence(ch, d, "primitive")
            journal = state / "engine" / "journal.sqlite"
            os.truncate(journal, 0)
            for _ in range(3):
                lost = failure(next_sequence, ch, d, "primitive")
                assert lost.code == grpc.StatusCode.UNAVAILABLE, lost
                assert lost.diagnostic["code"] == "query.journal_unavailable", lost.diagnostic
        said = [line for line in d.output if "the native journal cannot be read:" in line]
        assert len(said) == 1 and "SQLITE_" in said[0], said
        d.kill9()
        for name in ("journal.sqlite", "journal.sqlite-wal", "journal.sqlite-shm"):
            (state / "engine" / name).unlink(missing_ok=True)
        r = gateway_once("demo", "--state-dir", str(state), "--port", "0")
        assert r.returncode != 0 and "had a journal" in r.stdout + r.stderr, r.stdout + r.stderr
        assert not journal.exists(), "no empty journal was made in its place"
        (state / "engine" / "journal.created").unlink()
        d.start()
        with channel(d) as ch:
            assert next_sequence(ch, d, "primitive") == 1, "an empty journal, as the operator chose"
        d.assert_clean_stop()
    finally:
        d.stop()


def test_a_journal_a_newer_build_wrote_is_refused_at_start(tmp_path):
    """The journal's compatibility floor (JournalStore "Formats"; SQLite's header user_version): a
    journal whose floor is above this build's format (a newer build's, after a rollback) is
    refused at start with exit 2 and one line naming the journal and both formats, and left as it
    was; at this build's format it serves again."""
    state = tmp_path / "state"
    d = Daemon(state).start()
    d.assert_clean_stop()
    journal = state / "engine" / "journal.sqlite"

    def set_floor(value):
        old = os.umask(0o077)  # a WAL file SQLite makes here is the daemon's to open
        try:
            db = sqlite3.connect(journal)
            try:
                db.execute(f"PRAGMA user_version = {int(value)}")
                return db.execute("PRAGMA user_version").fetchone()[0]
            finally:
                db.close()
        finally:
            os.umask(old)

    assert set_floor(2) == 2
    err = refused(state)
    assert (f"transit-flight: the journal {journal} requires journal format 2 or newer; this"
            " build implements format 1: run a newer build") in err.splitlines(), err
    assert set_floor(2) == 2, "never lowered"
    set_floor(1)
    d.start()
    d.assert_clean_stop()


def test_started_with_sighup_ignored_says_reload_is_unavailable_and_still_serves(tmp_path):
    # nohup leaves SIGHUP ignored; the JVM then installs no handler, so the daemon must say so
    # instead of letting every reload signal vanish.
    d = Daemon(tmp_path / "state").start(ignore_hangup=True)
    try:
        assert any("SIGHUP is ignored" in line for line in d.output), "".join(d.output)
        c = Caller(d, "primitive")
        assert c.read(c.info("SELECT COUNT(*) FROM primitive", c.next_sequence())).num_rows == 1
        d.hangup()
        assert d.proc.poll() is None, "an ignored SIGHUP must not stop the daemon"
    finally:
        d.assert_clean_stop()


def test_started_normally_does_not_warn_about_sighup(tmp_path):
    d = Daemon(tmp_path / "state").start()
    try:
        assert not any("SIGHUP" in line for line in d.output), "".join(d.output)
    finally:
        d.assert_clean_stop()


def test_a_refused_reload_generates_no_secret_and_an_accepted_one_does(tmp_path):
    """A reload that adds a caller whose credential and key are still to be generated, while
    another caller's credential is readable by others: refused, and nothing is written (until
    2026-12-07 the new caller's secrets were generated before the refusal, for the next reload
    or start to use). Fixed, the same file reloads and the new caller is served."""
    state = tmp_path / "state"
    d = Daemon(state).start()
    try:
        cfg = d.config()
        extra = dict(next(c for c in cfg["callers"] if c["name"] == "primitive"))
        extra.update(name="extra", principal=990, requests=990,
                     credential_file="credentials/extra.token",
                     principal_key_file="keys/principal-990.key")
        cfg["callers"].insert(0, extra)  # its secrets would be generated first
        d.write_config(cfg)
        cred = state / "credentials" / "mixed.token"
        cred.chmod(0o604)
        outcome = d.reload()
        assert "reload refused" in outcome and "mixed.token" in outcome, outcome
        assert not (state / "credentials" / "extra.token").exists()
        assert not (state / "keys" / "principal-990.key").exists()
        cred.chmod(0o600)
        assert d.reload() == "reloaded"
        assert Caller(d, "extra").next_sequence() == 1
    finally:
        d.assert_clean_stop()


def test_a_lost_principal_key_of_a_used_principal_is_refused_not_generated(tmp_path):
    """A caller's principal key removed after a statement of its was accepted: a SIGHUP reload is
    refused naming the file, and the key in force keeps serving (a retry of the accepted
    statement replays it); a restart exits 2 naming the file. Until 2026-12-07 a new key was
    generated silently, and the retry conflicted (ABORTED query.namespace_conflict,
    use_next_sequence): a client following that ran the statement twice. A caller new to the
    journal, added by a reload, still gets its key generated."""
    state = tmp_path / "state"
    d = Daemon(state).start()
    sql = "SELECT COUNT(*) FROM primitive WHERE a > 3"
    try:
        cfg = d.config()
        at = [c["name"] for c in cfg["callers"]].index("primitive")
        primitive = cfg["callers"][at]
        key = state / primitive["principal_key_file"]
        journal, principal = d.journal(), primitive["principal"]
        with channel(d) as ch:
            s0 = next_sequence(ch, d, "primitive")
            c0, _ = info_fields(sql_info(ch, d, "primitive", sql, s0))
            seed = key.read_bytes()
            key.unlink()
            outcome = d.reload()
            assert "reload refused" in outcome and str(key) in outcome, outcome
            assert "restore the file from a backup" in outcome, outcome
            assert not key.exists(), "a refused reload writes no key"
            c1, _ = info_fields(sql_info(ch, d, "primitive", sql, s0))
            assert c1 == c0, "the retry replays under the key in force"
            assert journal.queries(principal) == {s0: (c0, "SUCCEEDED")}

        write_private(key, seed.decode())
        extra = dict(primitive, name="extra", principal=991, requests=991,
                     credential_file="credentials/extra.token",
                     principal_key_file="keys/principal-991.key")
        cfg["callers"].append(extra)
        d.write_config(cfg)
        assert d.reload() == "reloaded"
        assert (state / "keys" / "principal-991.key").exists()
        assert Caller(d, "extra").next_sequence() == 1
        d.assert_clean_stop()

        key.unlink()
        err = refused(state)
        assert str(key) in err and "restore the file from a backup" in err, err
        assert not key.exists(), "a refused start writes no key"
        # check-config does not read the journal: it says what it cannot tell.
        r = gateway_once("check-config", "--config", str(state / "gateway.json"))
        assert r.returncode == 0 and f"note: callers[{at}].principal_key_file {key}" in r.stdout, \
            r.stdout + r.stderr
        write_private(key, seed.decode())
        d.start()
        with channel(d) as ch:
            c2, _ = info_fields(sql_info(ch, d, "primitive", sql, s0))
            assert c2 == c0, "the restored key replays after a restart"
    finally:
        d.assert_clean_stop()


def hangup_while_starting(d, starting, what):
    """Starts ``d`` on a thread of its own, sends SIGHUP once ``starting()`` holds, and checks
    that the start completed, held the SIGHUP and ran its reload once serving."""
    started = {}
    th = threading.Thread(target=lambda: started.update(d=d.start(timeout=180)), daemon=True)
    try:
        th.start()
        wait_until(starting, 120, what)
        os.kill(d.proc.pid, signal.SIGHUP)
        th.join(200)
        assert started.get("d") is d, "".join(d.output[-20:])
        d.saw("SIGHUP received while starting")
        d.saw("configuration reloaded")
        assert Caller(d, "primitive").next_sequence() == 1
    finally:
        # Whatever failed, the start ends first (its own 180 s bound), then the daemon stops.
        th.join(200)
        d.assert_clean_stop()


def test_a_sighup_while_starting_is_held_and_the_reload_runs_once_serving(tmp_path):
    """A start can take minutes (--warm-up here); the JVM's own SIGHUP handler would end the
    process (exit 129) on a `systemctl reload` meanwhile."""
    state = tmp_path / "hup"
    d = Daemon(state, command=[str(ROOT / "scripts" / "gateway"), "demo", "--state-dir",
                               str(state), "--port", "0", "--warm-up", "300"])

    def warming_up():
        # The scratch gateway's threads run only after the handler is installed.
        if d.proc is None:
            return False
        try:
            tasks = list(Path(f"/proc/{d.proc.pid}/task").iterdir())
        except FileNotFoundError:
            return False
        names = []
        for t in tasks:
            try:
                names.append((t / "comm").read_text())
            except OSError:
                pass
        return any(n.startswith("native-exec") for n in names)

    hangup_while_starting(d, warming_up, "the warm-up to run")


def test_a_sighup_before_the_configuration_is_read_is_held_too(tmp_path):
    """The demo's first start writes its data before it reads any configuration; a SIGHUP then
    (until 2026-12-07 the JVM's default handler was still in place: exit 129) is held like one
    during the warm-up."""
    state = tmp_path / "fresh"
    d = Daemon(state, command=[str(ROOT / "scripts" / "gateway"), "demo", "--state-dir",
                               str(state), "--port", "0"])
    hangup_while_starting(d, lambda: (state / "demo-data").exists(),
                          "the demo's data to be written")


def test_a_sighup_during_the_stop_reloads_nothing(tmp_path):
    """Once SIGTERM began the stop (here its 3 s drain notice) a reload would install rights
    through a journal the close is about to shut: it is logged and skipped."""
    state = Daemon.template(tmp_path / "state", ops={"drain_notice_ms": 3000})
    d = Daemon(state).start()
    pid = d.proc.pid
    d.proc.send_signal(signal.SIGTERM)
    d.saw("draining: health NOT_SERVING")  # the stop began: its notice runs
    os.kill(pid, signal.SIGHUP)
    d.assert_clean_stop()
    log = "".join(d.output)
    assert "SIGHUP during the stop: not reloaded" in log, log[-2000:]
    assert "configuration reloaded" not in log


def test_second_daemon_on_the_same_state_dir_refuses_naming_the_holder(tmp_path):
    # Issue 14 finding 6: two daemons on one journal would hand out interleaved sequences.
    state = tmp_path / "state"
    d = Daemon(state).start()
    try:
        message = refused(state).strip()
        assert message.count("\n") == 0, message
        assert f"pid {d.proc.pid}" in message and "one daemon per state directory" in message, message
        assert (state / "gateway.lock").read_text().strip() == str(d.proc.pid)
        c = Caller(d, "primitive")
        assert c.read(c.info("SELECT COUNT(*) FROM primitive", c.next_sequence())).num_rows == 1
    finally:
        d.assert_clean_stop()
    # The lock ends with its holder: the directory serves again.
    d = Daemon(state).start()
    d.assert_clean_stop()


def test_existing_state_is_restricted_to_its_owner_at_start(tmp_path):
    state = tmp_path / "state"
    d = Daemon(state).start()
    d.assert_clean_stop()
    journal = state / "engine" / "journal.sqlite"
    loose = [state, state / "keys", state / "credentials", state / "engine"]
    segments = state / "engine" / "segments"
    if segments.is_dir():
        loose.append(segments)
    for p in loose:
        p.chmod(0o755)
    journal.chmod(0o644)
    d = Daemon(state).start()
    try:
        for p in loose:
            assert p.stat().st_mode & 0o777 == 0o700, p
        for f in (state / "engine").rglob("*"):
            if f.is_file() and not f.is_symlink():
                assert f.stat().st_mode & 0o777 == 0o600, f
        said = "".join(d.output)
        assert "journal.sqlite: mode rw-r--r-- restricted to rw-------" in said, said
    finally:
        d.assert_clean_stop()


def test_first_run_leaves_no_state_readable_by_others(tmp_path):
    state = tmp_path / "state"
    d = Daemon(state).start()
    try:
        for f in [state, *(state / "engine").rglob("*")]:
            if not f.is_symlink():
                assert f.stat().st_mode & 0o077 == 0, f
        # Created private, not tightened afterwards: the start-up check has nothing to report.
        said = "".join(d.output)
        assert "restricted to" not in said, said
    finally:
        d.assert_clean_stop()
