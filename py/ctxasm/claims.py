"""Tenant claims: what tells the database which tenant (and, optionally, which user and agent) a session is.

A claim is an HS256 JWT (RFC 7519; HMAC-SHA256, RFC 2104) over {"tenant", "user", "agent", "iat", "exp"}.
`ctx_session.set_tenant(in_claim)` verifies it in the database with a key the application role can never read,
and refuses a wrong, expired, tampered, malformed or unregistered-tenant claim with one uniform error.

Who holds what: the deployment makes the claim key once and hands it to the trusted side only: the state
directory (`.ctxasm/claim_key`, mode 0600) or `CTXASM_CLAIM_KEY`, and `ctxasm db deploy` installs it in the
database (owner only). A process with the key mints claims (`ClaimSigner`, `ctxasm claim`); a process launched
with one claim (`CTXASM_CLAIM`, `--claim`) can act for that claim's tenant and nothing else (`FixedClaim`).
The store asks its claim source for a claim each time it sets the tenant.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from ctxasm.errors import ConfigError, InvalidClaim

CLAIM_KEY_ENV = "CTXASM_CLAIM_KEY"
CLAIM_ENV = "CTXASM_CLAIM"
KEY_FILE = "claim_key"
#: A claim lives 15 minutes unless asked otherwise, and never more than a day (the database refuses longer).
DEFAULT_TTL = 15 * 60
MAX_TTL = 24 * 3600
MIN_KEY_BYTES = 32
_HEADER = {"alg": "HS256", "typ": "JWT"}
_TTL = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


class ClaimSource(Protocol):
    """Where a store gets the claim it sends to set_tenant."""

    def claim_for(self, tenant_id: str) -> str: ...


@dataclass(frozen=True)
class Claim:
    """A claim's payload, as the database will read it."""

    tenant_id: str
    user_id: str | None
    agent_id: str | None
    issued_at: int
    expires_at: int


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: str, signing_input: str) -> str:
    return _b64(hmac.new(key.encode("utf-8"), signing_input.encode("ascii"), hashlib.sha256).digest())


def parse_ttl(text: str | int) -> int:
    """Seconds from "900", "900s", "15m", "2h" or "1d"; at most a day."""
    match = _TTL.match(str(text))
    if not match:
        raise ConfigError(f"config_error: --ttl {str(text)[:40]!r} is not a duration like 15m, 2h or 900s")
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if not 0 < seconds <= MAX_TTL:
        raise ConfigError(f"config_error: --ttl must be between 1 second and {MAX_TTL // 3600} hours")
    return seconds


def mint(key: str, tenant_id: str, user_id: str | None = None, agent_id: str | None = None, *,
         ttl: int = DEFAULT_TTL, now: float | None = None) -> str:
    """A signed claim for `tenant_id` (and the user and agent, when given), valid for `ttl` seconds. An empty
    user or agent is refused (the database refuses such a claim too): it names no one, and would act tenant-wide."""
    for option, value in (("--tenant", tenant_id), ("--user", user_id), ("--agent", agent_id)):
        if value == "":
            raise ConfigError(f"config_error: {option} must not be empty (leave it out for a claim that names none)")
    issued = int(time.time() if now is None else now)
    payload: dict[str, Any] = {"tenant": tenant_id}
    if user_id is not None:
        payload["user"] = user_id
    if agent_id is not None:
        payload["agent"] = agent_id
    payload.update(iat=issued, exp=issued + int(ttl))
    signing_input = ".".join(_b64(json.dumps(part, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
                             for part in (_HEADER, payload))
    return f"{signing_input}.{_mac(key, signing_input)}"


def read(token: str) -> Claim:
    """The payload of a claim, NOT verified (only the database and `verify` check the signature): for a process
    that was handed a claim and must know whose it is. InvalidClaim when it is not a claim at all."""
    try:
        header_text, payload_text, _ = token.split(".")
        header = json.loads(_unb64(header_text))
        payload = json.loads(_unb64(payload_text))
        if header.get("alg") != "HS256" or not isinstance(payload.get("tenant"), str):
            raise ValueError("not an HS256 tenant claim")
        return Claim(payload["tenant"], payload.get("user"), payload.get("agent"), int(payload["iat"]),
                     int(payload["exp"]))
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise InvalidClaim(f"invalid_claim: not a tenant claim ({type(exc).__name__})") from None


def verify(key: str, token: str, *, now: float | None = None) -> Claim:
    """The claim if `key` signed it and it is in effect now (the database's rules, without the tenant registry)."""
    parts = token.split(".") if isinstance(token, str) else []
    if len(parts) != 3 or not hmac.compare_digest(parts[2].encode(), _mac(key, f"{parts[0]}.{parts[1]}").encode()):
        raise InvalidClaim("invalid_claim: the claim is not signed with this key")
    claim = read(token)
    moment = time.time() if now is None else now
    if claim.expires_at <= moment:
        raise InvalidClaim("invalid_claim: the claim has expired")
    return claim


@dataclass
class ClaimSigner:
    """The trusted side: holds the claim key and mints a claim for any tenant, scoped to `user_id` and
    `agent_id` when they are given. A minted claim is reused until half its lifetime is gone."""

    key: str = field(repr=False)
    user_id: str | None = None
    agent_id: str | None = None
    ttl: int = DEFAULT_TTL
    _cache: dict[str, tuple[str, float]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if len(self.key.encode("utf-8")) < MIN_KEY_BYTES:
            raise ConfigError(f"config_error: the claim key must be at least {MIN_KEY_BYTES} bytes")

    def mint(self, tenant_id: str, user_id: str | None = None, agent_id: str | None = None,
             ttl: int | None = None) -> str:
        return mint(self.key, tenant_id, user_id, agent_id, ttl=ttl or self.ttl)

    def claim_for(self, tenant_id: str) -> str:
        now = time.time()
        cached = self._cache.get(tenant_id)
        if cached and cached[1] > now:
            return cached[0]
        token = self.mint(tenant_id, self.user_id, self.agent_id)
        self._cache[tenant_id] = (token, now + self.ttl / 2)
        return token

    def scoped(self, user_id: str | None, agent_id: str | None) -> ClaimSigner:
        return ClaimSigner(self.key, user_id, agent_id, self.ttl)


class FixedClaim:
    """A process launched with one claim: it acts for that claim's tenant only. Asking for another tenant is
    refused here, before any database call, with the same uniform error the database gives."""

    def __init__(self, token: str):
        self.token = token.strip()
        self.claim = read(self.token)

    def claim_for(self, tenant_id: str) -> str:
        if tenant_id != self.claim.tenant_id:
            raise InvalidClaim()  # the database's one answer to every refusal: the catalogue's message
        if self.claim.expires_at <= time.time():
            raise InvalidClaim("invalid_claim: the claim this process was given has expired; ask for a new one")
        return self.token


def key_path():
    from ctxasm.settings import state_dir

    return state_dir() / KEY_FILE


def read_key() -> str | None:
    """The claim key of this process's launch configuration: CTXASM_CLAIM_KEY, else the state directory's."""
    value = os.environ.get(CLAIM_KEY_ENV)
    if value:
        return value.strip()
    path = key_path()
    return path.read_text(encoding="utf-8").strip() if path.is_file() else None


def ensure_key() -> str:
    """The claim key, made once (32 random bytes, base64url) and kept 0600 in the state directory."""
    key = read_key()
    if key:
        return key
    path = key_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(32)  # 43 characters, 256 random bits
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")
    return key


def launch_claims(token: str | None = None, *, user_id: str | None = None,
                  agent_id: str | None = None) -> ClaimSource:
    """The claim source this process was launched with: the claim given (`--claim`, else CTXASM_CLAIM), else a
    signer over the claim key (scoped to `user_id` / `agent_id`). ConfigError when there is neither."""
    token = token or os.environ.get(CLAIM_ENV)
    if token:
        return FixedClaim(token)
    key = read_key()
    if not key:
        raise ConfigError(f"config_error: no tenant claim: give --claim or {CLAIM_ENV}, or run where the claim key "
                          f"is ({CLAIM_KEY_ENV} or {key_path()}, written by `ctxasm db deploy`)")
    return ClaimSigner(key, user_id, agent_id)


class StoreClaims:
    """A store's claims (PostgresStore and OracleStore take them from here): the claim source it was given, else
    this process's launch configuration, read on first use."""

    _claims: ClaimSource | None

    @property
    def claims(self) -> ClaimSource:
        if self._claims is None:
            self._claims = launch_claims()
        return self._claims

    def _claim(self, tenant_id: str) -> str:
        return self.claims.claim_for(tenant_id)
