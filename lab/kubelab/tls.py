# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Certificates and a bearer token for the lab cluster's HTTPS endpoint.

``generate_tls(directory)`` writes a CA (``ca.crt``, ``ca.key``) and a server certificate
(``server.crt``, ``server.key``) for 127.0.0.1, ::1 and localhost; keys are mode 0600.
ECDSA P-256 keys: quick to make, accepted by Go (kubectl, Helm), OpenSSL and urllib3.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import os
import secrets

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_HOSTS = ("127.0.0.1", "::1", "localhost")


@dataclasses.dataclass(frozen=True)
class TlsFiles:
    """Paths of the PEM files ``generate_tls`` wrote, and the CA certificate's PEM bytes."""

    directory: str
    ca_cert: str
    ca_key: str
    server_cert: str
    server_key: str
    ca_pem: bytes

    @property
    def server_pair(self) -> tuple[str, str]:
        """``(cert_path, key_path)`` as ``LabServer(tls=...)`` takes it."""
        return (self.server_cert, self.server_key)


def write_private(path: str, data: bytes | str, mode: int = 0o600) -> str:
    """Write ``data`` to ``path`` created with ``mode`` (0600: never readable by others, not even briefly)."""
    if isinstance(data, str):
        data = data.encode()
    tmp = "%s.tmp-%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _san(hosts) -> x509.SubjectAlternativeName:
    names = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def generate_tls(directory: str, hosts=DEFAULT_HOSTS, days: int = 30, common_name: str = "kubelab") -> TlsFiles:
    """Make a CA and a server certificate signed by it, for ``hosts`` (IP addresses and DNS names)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    not_before, not_after = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=days)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "%s-ca" % common_name)])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_san(hosts), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(server_key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    paths = {name: os.path.join(directory, name) for name in ("ca.crt", "ca.key", "server.crt", "server.key")}
    write_private(paths["ca.key"], _key_pem(ca_key))
    write_private(paths["server.key"], _key_pem(server_key))
    write_private(paths["ca.crt"], ca_pem, 0o644)
    write_private(paths["server.crt"], server_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return TlsFiles(directory, paths["ca.crt"], paths["ca.key"], paths["server.crt"], paths["server.key"], ca_pem)


def generate_token(nbytes: int = 32) -> str:
    """A random bearer token (URL-safe base64 of ``nbytes`` random bytes)."""
    return secrets.token_urlsafe(nbytes)


def write_token(path: str, token: str | None = None) -> str:
    """Write ``token`` (a new one when None) to ``path``, mode 0600; returns the token."""
    token = token or generate_token()
    write_private(path, token + "\n")
    return token


def read_token(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()
