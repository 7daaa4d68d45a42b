"""Who the requests are from: AWS credentials and region the usual AWS way, and each
request's ``Authorization`` header.

botocore does what it is good at: the credential chain (environment, shared files and
profiles, SSO, container and instance metadata) and SigV4 signing. Resolving the chain may
read files or reach the instance metadata service, so it runs off the event loop, once; a
refreshable credential is refreshed off the loop too. A Bedrock API key
(``AgentConfig.api_key`` or ``AWS_BEARER_TOKEN_BEDROCK``) is sent as a bearer token instead
of a signature, as Bedrock documents.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping
from typing import Any

from oma_core import ProviderError

from .capabilities import DISPLAY_NAME

__all__ = ["AwsIdentity", "SIGNING_NAME"]

#: The service name SigV4 signs Bedrock's runtime requests for.
SIGNING_NAME = "bedrock"


class AwsIdentity:
    """Region, credentials and signing for one provider; resolved on first use."""

    def __init__(self, *, region: str | None, profile: str | None, api_key: str | None) -> None:
        self._region = region
        self._profile = profile
        self._bearer = api_key or os.environ.get("AWS_BEARER_TOKEN_BEDROCK") or None
        self._credentials: Any = None
        self._frozen: Any = None  # the last credentials signed with (never refreshed here)
        self._resolved = False
        self._lock = threading.Lock()

    @property
    def region(self) -> str:
        if self._region is None:
            raise ProviderError(
                f"{DISPLAY_NAME} needs a region: set AWS_REGION (or a profile's region) or "
                'provider_options["region"]',
                provider=DISPLAY_NAME,
                retryable=False,
            )
        return self._region

    def secrets(self) -> tuple[str | None, ...]:
        """What no error message may show: the bearer token and the credential's parts."""
        frozen = self._frozen
        parts: tuple[str | None, ...] = (self._bearer,)
        if frozen is not None:
            parts += (frozen.access_key, frozen.secret_key, frozen.token)
        return parts

    async def resolve(self) -> None:
        """Find the region and credentials (off the loop, the first time only)."""
        if not self._resolved:
            await asyncio.to_thread(self._resolve)

    def _resolve(self) -> None:
        with self._lock:
            if self._resolved:
                return
            import botocore.session

            session = botocore.session.Session(profile=self._profile)
            if self._region is None:  # AWS_REGION (the SDKs' common name), then botocore's
                self._region = os.environ.get("AWS_REGION") or session.get_config_variable("region")
            if self._bearer is None:
                self._credentials = session.get_credentials()
            self._resolved = True

    async def headers(self, url: str, body: bytes, headers: Mapping[str, str]) -> dict[str, str]:
        """``headers`` plus what authenticates a POST of ``body`` to ``url``."""
        if self._bearer is not None:
            return {**headers, "authorization": f"Bearer {self._bearer}"}
        credentials = self._credentials
        if credentials is None:
            raise ProviderError(
                f"{DISPLAY_NAME} found no AWS credentials: set them the usual AWS way "
                "(environment, profile, SSO, instance role) or pass a Bedrock API key",
                provider=DISPLAY_NAME,
                retryable=False,
            )
        refresh = getattr(credentials, "refresh_needed", None)
        if refresh is not None and refresh():
            frozen = await asyncio.to_thread(credentials.get_frozen_credentials)
        else:
            frozen = credentials.get_frozen_credentials()
        self._frozen = frozen
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
        SigV4Auth(frozen, SIGNING_NAME, self.region).add_auth(request)
        return dict(request.headers.items())
