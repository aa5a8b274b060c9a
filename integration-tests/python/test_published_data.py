"""Published data that is not what its declaration says, through the real daemon
(docs/native-engine.md): a CSV field that is not exactly a value of its type fails the start
naming it."""

import pytest


def _republish(d, files, fmt, columns):
    """Serves `files` as the mixed caller's Table (still named mixed), declared `columns`."""
    cfg = d.config()
    pub = next(p for p in cfg["publications"] if p["name"] == "mixed")
    pub.update(format=fmt, files=files, metadata_ref=f"tests:published-data:{fmt}",
               columns=[{"name": n, "type": t, "nullable": True} for n, t in columns])
    d.write_config(cfg)


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
