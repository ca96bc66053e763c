"""A TLS-terminating TCP proxy in front of the dev server (which has no TLS flags).

`make_pki` makes a throwaway CA, a server certificate for localhost/127.0.0.1 and a client
certificate; `TlsProxy` listens on 127.0.0.1 with the server certificate (ALPN `h2`, as
gRPC needs), optionally demands a client certificate signed by the CA, and pipes the
decrypted bytes to the dev server's plain port.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Pki", "TlsProxy", "make_pki"]

_START = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
_END = datetime.datetime(2099, 1, 1, tzinfo=datetime.UTC)


@dataclass(frozen=True)
class Pki:
    """PEM files of a test CA, a server certificate and a client certificate."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _issue(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    ca_key: ec.EllipticCurvePrivateKey,
    issuer: str,
    *,
    ca: bool = False,
    usage: ExtendedKeyUsageOID | None = None,
    names: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_START)
        .not_valid_after(_END)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
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
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def make_pki(directory: Path) -> Pki:
    """Write a CA, a server certificate (localhost, 127.0.0.1) and a client certificate."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _issue("durable-tools test CA", ca_key, ca_key, "durable-tools test CA", ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = _issue(
        "localhost",
        server_key,
        ca_key,
        "durable-tools test CA",
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        names=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_cert = _issue(
        "worker", client_key, ca_key, "durable-tools test CA", usage=ExtendedKeyUsageOID.CLIENT_AUTH
    )
    files = {
        "ca": ca_cert.public_bytes(serialization.Encoding.PEM),
        "server_cert": server_cert.public_bytes(serialization.Encoding.PEM),
        "server_key": _key_pem(server_key),
        "client_cert": client_cert.public_bytes(serialization.Encoding.PEM),
        "client_key": _key_pem(client_key),
    }
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (directory / f"{name}.pem").write_bytes(data)
    return Pki(**{name: directory / f"{name}.pem" for name in files})


class TlsProxy:
    """TLS on 127.0.0.1:<free port>, plain TCP to `upstream`; use with `async with`.

    Args:
        upstream: The dev server's "host:port".
        pki: The certificates (see `make_pki`).
        require_client_cert: Refuse a client without a certificate signed by the CA.
    """

    def __init__(self, upstream: str, pki: Pki, *, require_client_cert: bool = False) -> None:
        host, _, port = upstream.rpartition(":")
        self._upstream = (host, int(port))
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(pki.server_cert, pki.server_key)
        self._context.set_alpn_protocols(["h2"])
        if require_client_cert:
            self._context.verify_mode = ssl.CERT_REQUIRED
            self._context.load_verify_locations(cafile=pki.ca)
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()
        self.connections = 0
        """TLS connections accepted (their handshake succeeded)."""

    @property
    def address(self) -> str:
        """Where the proxy listens, as host:port."""
        assert self._server is not None, "the proxy is not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"{host}:{port}"

    async def __aenter__(self) -> TlsProxy:
        self._server = await asyncio.start_server(
            self._accept, "127.0.0.1", 0, ssl=self._context, ssl_handshake_timeout=10
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for pipe in list(self._pipes):
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.close()
            return
        pipes = [
            asyncio.ensure_future(_pipe(reader, up_writer)),
            asyncio.ensure_future(_pipe(up_reader, writer)),
        ]
        self._pipes.update(pipes)
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pipe in pipes:
                pipe.cancel()
                self._pipes.discard(pipe)
            for w in (writer, up_writer):
                w.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
