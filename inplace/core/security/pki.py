"""A local certificate authority: one CA signs the serving and client certificates.

Client certificates carry identity as kube-apiserver reads it: CN = user name, O = groups.
ECDSA P-256 keys: fast to generate, and every client we serve (Go, OpenSSL) accepts them.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
LEAF_DAYS = 365


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    def private_key(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key(self.key_pem, password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return key


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> dt.datetime:
    # Backdated a little: a client whose clock runs behind still accepts a fresh certificate.
    return dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)


def new_ca(common_name: str = "inplace-ca", days: int = CA_DAYS) -> KeyPair:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem(key))


def issue(
    ca: KeyPair,
    common_name: str,
    *,
    organizations: Sequence[str] = (),
    hosts: Sequence[str] = (),
    server: bool = False,
    client: bool = True,
    days: int = LEAF_DAYS,
) -> KeyPair:
    """A leaf certificate signed by `ca`; `hosts` (DNS names or IP addresses) become SANs."""
    key = _key()
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] if server else []
    usages += [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
    ca_cert = ca.certificate
    start = _now()
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attributes))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.private_key().public_key()),
            critical=False,
        )
    )
    if hosts:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False
        )
    cert = builder.sign(ca.private_key(), hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem(key))


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def subject_of(der: bytes) -> tuple[str, tuple[str, ...]]:
    """(CN, O values) of a DER certificate: the user name and groups it authenticates as."""
    subject = x509.load_der_x509_certificate(der).subject
    cn = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    groups = subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return (str(cn[0].value) if cn else "", tuple(str(g.value) for g in groups))
