"""Published data that is not what its declaration says, through the real daemon
(docs/native-engine.md): a CSV field that is not exactly a value of its type fails the start
naming it, and a UTF8 value that is not UTF-8 fails the statements that read it DATA_LOSS
query.evidence, the published file's fault, not INTERNAL query.internal (docs/status.md)."""

import grpc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calls import Caller, failure, sql_info


def _republish(d, files, fmt, columns):
    """Serves `files` as the mixed caller's Table (still named mixed), declared `columns`."""
    cfg = d.config()
    pub = next(p for p in cfg["publications"] if p["name"] == "mixed")
    pub.update(format=fmt, files=files, metadata_ref=f"tests:published-data:{fmt}",
               columns=[{"name": n, "type": t, "nullable": True} for n, t in columns])
    d.write_config(cfg)


def test_a_utf8_value_that_is_not_utf8_fails_its_statement_data_loss(configured, tmp_path):
    d = configured(tmp_path)
    raw = pa.array([b"ok", b"\xff\xfe", b"a"], pa.binary())
    # PyArrow's cast would check the bytes; the same buffers as a string array are not checked.
    s = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())
    pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int64()), "s": s}),
                   d.state_dir / "strings.parquet")
    _republish(d, ["strings.parquet"], "parquet", [("k", "INT64"), ("s", "UTF8")])
    d.start()
    try:
        mixed = Caller(d, "mixed")
        with grpc.insecure_channel(d.target) as ch:
            code, message, diagnostic = failure(sql_info, ch, d, "mixed",
                                                "SELECT COUNT(*) FROM mixed WHERE s = 'a'",
                                                mixed.next_sequence())
        assert code == grpc.StatusCode.DATA_LOSS, message
        assert diagnostic["code"] == "query.evidence", diagnostic
        assert diagnostic["outcome"] == "failed", diagnostic
        assert diagnostic["actions"] == ["contact_operator", "use_next_sequence"], diagnostic
        assert "not valid UTF-8" in message and "\\xff" not in message.lower(), message
        # Statements that do not read the strings still answer.
        table, _ = mixed.query("SELECT COUNT(*) FROM mixed")
        assert table.column(0).to_pylist() == [3]
        mixed.close()
    finally:
        d.close()


@pytest.mark.parametrize("k,d,column", [("1.5", "2024-01-05", "k"),
                                        ("1", "2024-01-05 23:59:59", "d"),
                                        ("1", "2024-1-5", "d")])
def test_a_csv_field_that_is_not_exactly_its_type_fails_the_start(configured, tmp_path, k, d,
                                                                   column):
    daemon = configured(tmp_path)
    (daemon.state_dir / "t.csv").write_text(f"k,d\n2,2024-01-04\n{k},{d}\n")
    _republish(daemon, ["t.csv"], "csv", [("k", "INT64"), ("d", "DATE")])
    try:
        with pytest.raises(RuntimeError) as refused:
            daemon.start()
        said = str(refused.value)
        assert f"publication mixed: column {column} is" in said and "row 2" in said, said
        assert "t.csv" in said, said
    finally:
        daemon.close()
