"""The TLS edge: Debian's nginx terminates TLS (a test CA and server certificate made here) and
forwards with grpc_pass to the gateway over TCP and over a Unix domain socket. PyArrow and ADBC
connect with grpc+tls and the test CA; a failing query's status, message and
transit-diagnostic-bin trailer arrive unchanged. Also the gateway's own TLS listener."""

import json

import grpc
import pyarrow.flight as fl
import pytest
from adbc_driver_flightsql import DatabaseOptions

import calls as C
import edgetls
from clients import adbc_connect
from daemon import gateway_once

pytestmark = pytest.mark.skipif(edgetls.nginx_binary() is None,
                                reason="nginx missing: scripts/setup.d/20-nginx.sh installs it")

SEQ = "adbc.flight.sql.rpc.call_header.x-transit-request-sequence"
NEXT = "adbc.flight.sql.session.option.transit.next_sequence"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return edgetls.make_certs(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def edge(configured, tmp_path_factory, certs):
    work = tmp_path_factory.mktemp("edge")
    sock = work / "gw.sock"
    daemon = configured(work / "gw", {"listen": {"unix_socket": str(sock)}}).start()
    try:
        nginx = edgetls.Nginx(work / "nginx", certs, daemon.port, sock).start()
    except BaseException:
        daemon.stop()  # nginx did not start (and was stopped): the daemon goes too
        raise
    try:
        yield daemon, nginx
    finally:
        try:
            nginx.stop()
        finally:
            daemon.assert_clean_stop()
    assert not sock.exists(), "the daemon removes its socket file on exit"


def pyarrow_query(uri, ca_pem, daemon, sql="SELECT COUNT(*), SUM(a) FROM primitive"):
    caller = C.Caller(daemon, "primitive", uri=uri, tls_root_certs=ca_pem)
    try:
        return caller.query(sql)[0]
    finally:
        caller.close()


@pytest.mark.parametrize("via", ["tcp", "uds"])
def test_pyarrow_through_nginx_tls(edge, certs, via):
    daemon, nginx = edge
    port = nginx.tcp_port if via == "tcp" else nginx.uds_port
    t = pyarrow_query(f"grpc+tls://localhost:{port}", certs["ca"].read_bytes(), daemon)
    assert t.num_rows == 1 and t.column(0)[0].as_py() >= 1_000_000
    big = pyarrow_query(f"grpc+tls://localhost:{port}", certs["ca"].read_bytes(), daemon,
                        "SELECT id, a FROM primitive")
    assert big.num_rows >= 1_000_000


@pytest.mark.parametrize("via", ["tcp", "uds"])
def test_adbc_through_nginx_tls(edge, certs, via):
    daemon, nginx = edge
    port = nginx.tcp_port if via == "tcp" else nginx.uds_port
    with adbc_connect(f"grpc+tls://localhost:{port}", daemon.token("primitive"), **{
            DatabaseOptions.TLS_ROOT_CERTS.value: certs["ca"].read_text()}) as conn:
        cur = conn.cursor()
        cur.adbc_statement.set_options(**{SEQ: str(conn.adbc_connection.get_option_int(NEXT))})
        cur.execute("SELECT SUM(c) FROM primitive")
        assert cur.fetch_arrow_table().num_rows == 1


def failing_call(ch, daemon):
    s = C.failure(C.sql_info, ch, daemon, "primitive", "SELECT nope FROM primitive", 1)
    return s.code, s.message, s.raw_trailer


@pytest.mark.parametrize("via", ["tcp", "uds"])
def test_failure_and_trailer_pass_through_unchanged(edge, certs, via):
    daemon, nginx = edge
    port = nginx.tcp_port if via == "tcp" else nginx.uds_port
    creds = grpc.ssl_channel_credentials(root_certificates=certs["ca"].read_bytes())
    with grpc.secure_channel(f"localhost:{port}", creds) as through, C.channel(daemon) as direct:
        edge_result = failing_call(through, daemon)
        direct_result = failing_call(direct, daemon)
    assert edge_result[0] == grpc.StatusCode.INVALID_ARGUMENT
    assert edge_result == direct_result, "nginx changed the status, message or trailer"
    assert json.loads(edge_result[2])["code"] == "query.unknown_column"


def test_gateway_own_tls(configured, tmp_path, certs):
    d = configured(tmp_path, {"listen": {"tls": {
        "cert_file": str(certs["cert"]), "key_file": str(certs["key"])}}}).start()
    try:
        assert d.uris[0].startswith("grpc+tls://")
        t = pyarrow_query(f"grpc+tls://localhost:{d.port}", certs["ca"].read_bytes(), d)
        assert t.column(0)[0].as_py() >= 1_000_000
        # A plaintext client is not served on the TLS port.
        plain = fl.FlightClient(f"grpc://127.0.0.1:{d.port}")
        with pytest.raises(fl.FlightError):
            list(plain.do_action(fl.Action("GetSessionOptions", b""),
                                 fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {d.token('primitive')}".encode())],
                                                      timeout=10)))
        plain.close()
    finally:
        d.assert_clean_stop()


def test_gateway_tls_key_readable_by_others_is_refused(configured, tmp_path, certs):
    key = tmp_path / "open.key"
    key.write_bytes(certs["key"].read_bytes())
    key.chmod(0o644)
    d = configured(tmp_path, {"listen": {"tls": {
        "cert_file": str(certs["cert"]), "key_file": str(key)}}})
    r = gateway_once("check-config", "--config", str(d.config_path))
    assert r.returncode == 2 and "listen.tls.key_file" in r.stderr
