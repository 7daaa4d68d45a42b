"""A fake Microsoft Entra ID on 127.0.0.1, and the proxy that lets azure-identity reach it.

``FakeEntra`` serves the two requests a client-credentials sign-in makes (as Microsoft's
identity platform documents them): ``GET /{tenant}/v2.0/.well-known/openid-configuration``
(the tenant's metadata, naming its token endpoint) and ``POST /{tenant}/oauth2/v2.0/token``
with a form-encoded ``client_credentials`` grant, authenticated by a ``client_secret`` or by a
``client_assertion`` (a workload's OIDC token); it answers an access token, or the documented
``{"error", "error_description"}`` body with an ``AADSTS`` code.

azure-identity only talks to an ``https`` authority, and for one it does not know it first
asks Microsoft's instance discovery, so it cannot be pointed at a loopback URL. ``EntraProxy``
is an HTTPS proxy on 127.0.0.1 (``HTTPS_PROXY``) that answers ``CONNECT
login.microsoftonline.com:443`` itself: it ends TLS with a certificate for that name, signed
by a throwaway certificate authority (``ca_file``, for ``REQUESTS_CA_BUNDLE``), and hands the
decrypted bytes to a ``FakeEntra``. Any other host is refused (403), so nothing leaves the
machine.
"""

from __future__ import annotations

import contextlib
import datetime
import socket
import ssl
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from oma_core.testing.fake_server import FakeServer, RecordedRequest, Response

__all__ = ["AUTHORITY", "EntraProxy", "FakeEntra"]

#: The authority host azure-identity uses by default: the one the proxy answers for
AUTHORITY = "login.microsoftonline.com"
_SCOPE = "https://cognitiveservices.azure.com/.default"
_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_WAIT = 10.0  # every socket operation of the proxy is bounded by this


class FakeEntra(FakeServer):
    """One tenant's Entra ID: ``client_id`` signs in with ``secret`` (a client secret) or
    ``assertion`` (a client assertion) and gets ``access_token``."""

    def __init__(
        self,
        *,
        tenant: str,
        client_id: str,
        access_token: str,
        secret: str | None = None,
        assertion: str | None = None,
        authority: str = f"https://{AUTHORITY}",
    ) -> None:
        super().__init__()
        self.tenant, self.client_id, self.access_token = tenant, client_id, access_token
        self.secret, self.assertion, self.authority = secret, assertion, authority

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        body = {"error": error_type or "invalid_client", "error_description": message}
        return Response.json(body, status=status)

    def handle(self, request: RecordedRequest) -> Response:
        base = f"{self.authority}/{self.tenant}"
        metadata = f"/{self.tenant}/v2.0/.well-known/openid-configuration"
        if request.method == "GET" and request.path == metadata:
            return Response.json(
                {
                    "issuer": f"{base}/v2.0",
                    "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                    "token_endpoint": f"{base}/oauth2/v2.0/token",
                    "token_endpoint_auth_methods_supported": ["client_secret_post"],
                }
            )
        if request.method != "POST" or request.path != f"/{self.tenant}/oauth2/v2.0/token":
            return self.error_response(404, "AADSTS90002: Tenant not found.", "invalid_request")
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if form.get("grant_type") != "client_credentials" or form.get("scope") != _SCOPE:
            return self.error_response(400, "AADSTS70003: Unsupported grant.", "invalid_grant")
        if form.get("client_id") != self.client_id:
            return self.error_response(400, "AADSTS700016: Application not found.")
        by_secret = self.secret is not None and form.get("client_secret") == self.secret
        by_assertion = (
            self.assertion is not None
            and form.get("client_assertion") == self.assertion
            and form.get("client_assertion_type") == _ASSERTION_TYPE
        )
        if not (by_secret or by_assertion):
            return self.error_response(401, "AADSTS7000215: Invalid client secret provided.")
        token = {"token_type": "Bearer", "expires_in": 3599, "access_token": self.access_token}
        return Response.json(token)


class EntraProxy:
    """An HTTPS proxy on 127.0.0.1 that serves ``login.microsoftonline.com`` from ``target``
    (a ``FakeEntra``) and refuses every other host; ``ca_file`` is the certificate authority
    to trust; ``hosts`` every host a client asked to reach through it."""

    def __init__(self, target: FakeServer, directory: Path) -> None:
        self.target = target
        self.hosts: list[str] = []
        self.ca_file, cert_file, key_file = _certificates(directory)
        self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._tls.load_cert_chain(cert_file, key_file)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def close(self) -> None:
        self._closed.set()
        self._accepting.join(_WAIT)
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:  # a shutdown wakes a thread blocked reading it; a close does not
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in self._threads:
            thread.join(_WAIT)
        self._listener.close()

    def __enter__(self) -> EntraProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._spawn(self._tunnel, client)

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _keep(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            self._sockets.append(sock)
        return sock

    def _tunnel(self, client: socket.socket) -> None:
        self._keep(client).settimeout(_WAIT)
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 8192:
            chunk = client.recv(1024)
            if not chunk:
                return
            head += chunk
        method, _, rest = head.partition(b" ")
        host = rest.split(b" ", 1)[0].decode("ascii", "replace")
        self.hosts.append(host)
        if method != b"CONNECT" or host != f"{AUTHORITY}:443":
            client.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            return
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        try:
            secure = self._keep(self._tls.wrap_socket(client, server_side=True))
        except (ssl.SSLError, OSError):
            return
        upstream = self._keep(socket.create_connection(("127.0.0.1", self.target.port), _WAIT))
        self._spawn(_pump, secure, upstream)
        _pump(upstream, secure)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until either side ends (bounded by their timeouts)."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _certificates(directory: Path) -> tuple[str, str, str]:
    """A throwaway certificate authority and, signed by it, a server certificate for
    ``login.microsoftonline.com``: the CA's file, the certificate's and its key's."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "oma test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, AUTHORITY)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(AUTHORITY)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    ca_file, cert_file, key_file = (directory / n for n in ("ca.pem", "cert.pem", "key.pem"))
    ca_file.write_bytes(ca.public_bytes(pem))
    cert_file.write_bytes(cert.public_bytes(pem))
    key_file.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(ca_file), str(cert_file), str(key_file)
