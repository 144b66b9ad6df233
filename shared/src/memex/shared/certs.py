"""Certificates for ``MEMEX_INTERNAL_AUTH=mtls``: one deployment CA, one certificate per service.

Each service's folder holds ``tls.crt``, ``tls.key`` and ``ca.crt``, the names a Kubernetes TLS
Secret mounts, so ``MEMEX_INTERNAL_TLS_DIR`` points at either. A certificate serves both ways
(server and client), and names the service as its clients address it: ``memex-<service>`` in the
namespace's short and full DNS forms, plus loopback for a stack on one machine and for probes.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from memex.shared.errors import InvalidArgument

SERVICES = ("embedding", "retrieval", "reasoner", "orchestrator", "worker", "gateway")
"""Every memex process that takes part in internal calls, as ``memex certs`` names them."""

_LOOPBACK = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


@dataclass(frozen=True)
class Issued:
    """What ``issue`` wrote: the CA (new or reused) and one folder per service."""

    ca_cert: Path
    ca_reused: bool
    service_dirs: dict[str, Path]


def _write(path: Path, data: bytes, private: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "memex"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _new_ca(days: int) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("memex internal CA"))
        .issuer_name(_name("memex internal CA"))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return key, cert


def dns_names(service: str, namespace: str) -> list[str]:
    """The names a service's certificate is valid for."""
    short = f"memex-{service}"
    return [
        short,
        f"{short}.{namespace}",
        f"{short}.{namespace}.svc",
        f"{short}.{namespace}.svc.cluster.local",
        "localhost",
    ]


def _service_cert(
    service: str,
    namespace: str,
    days: int,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names(service, namespace)]
    names += [x509.IPAddress(ip) for ip in _LOOPBACK]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(f"memex-{service}"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _load_ca(out: Path) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate] | None:
    key_path, cert_path = out / "ca.key", out / "ca.crt"
    if not key_path.exists():
        return None
    try:
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    except (OSError, ValueError) as exc:
        raise InvalidArgument(
            f"{out} holds a CA that cannot be read ({exc}); move it away to make a new one"
        ) from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise InvalidArgument(f"{key_path} is not a key `memex certs` made; move it away")
    return key, cert


def issue(
    out: Path,
    services: Sequence[str] = SERVICES,
    *,
    namespace: str = "memex",
    days: int = 365,
) -> Issued:
    """Writes a certificate and key for each of ``services`` under ``out/<service>/``, signed by
    the CA in ``out`` (made on first use and reused after, so certificates issued later, for
    rotation or a new service, still trust and are trusted by the earlier ones)."""
    if days < 1:
        raise InvalidArgument(f"days must be at least 1, not {days}")
    for service in services:
        if not service.replace("-", "").isalnum() or not service.islower():
            raise InvalidArgument(
                f"service name {service!r} must be lower-case letters, digits and '-'"
            )
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    loaded = _load_ca(out)
    if loaded is None:
        ca_key, ca_cert = _new_ca(days * 5)
        _write(out / "ca.key", _key_pem(ca_key), private=True)
        _write(out / "ca.crt", ca_cert.public_bytes(serialization.Encoding.PEM), private=False)
    else:
        ca_key, ca_cert = loaded
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    written: dict[str, Path] = {}
    for service in services:
        key, cert = _service_cert(service, namespace, days, ca_key, ca_cert)
        folder = out / service
        folder.mkdir(exist_ok=True, mode=0o700)
        _write(folder / "tls.key", _key_pem(key), private=True)
        _write(folder / "tls.crt", cert.public_bytes(serialization.Encoding.PEM), private=False)
        _write(folder / "ca.crt", ca_pem, private=False)
        written[service] = folder
    return Issued(out / "ca.crt", loaded is not None, written)
