"""Bearer-token checks shared by HTTP and gRPC, so both fronts of `gpuobs serve` obey the same rules."""

from __future__ import annotations

import hmac

__all__ = ["admin_secret", "bearer_matches"]


def bearer_matches(authorization: str | None, secret: str) -> bool:
    """Whether an `Authorization` value is `Bearer <secret>` (scheme case-insensitive, timing-safe)."""
    given = authorization or ""
    token = given[7:] if given.lower().startswith("bearer ") else ""
    return hmac.compare_digest(token.encode(), secret.encode())


def admin_secret(api_key: str | None, admin_token: str | None) -> str | None:
    """The token /admin/* needs: the admin token, else the API key (fail closed: with an API key set,
    hot-swap and faults are never open to callers without one)."""
    return admin_token or api_key or None
