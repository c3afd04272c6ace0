"""Secrets kept in the database, never in plaintext: today the model API key of eval replays
(`Agent.model_api_key`). A stored value is one of

    ""                 no key
    "env:NAME"         a reference: the key is read from the environment variable NAME when used
    "fernet:<token>"   the key, encrypted with Fernet (AES-128-CBC + HMAC-SHA256, `cryptography`)

The Fernet key is derived (SHA-256) from PROCMEM_SECRETS_KEY, or from SECRET_KEY when that is unset.
Changing it makes the stored keys unreadable: the runner then says so, and an agent admin sets the
key again. A database dump, a backup or the read-only role therefore never shows a usable key.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

ENV_PREFIX = "env:"
FERNET_PREFIX = "fernet:"
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_SECRET_CHARS = 256  # the sealed form must fit the 512-character column


class SecretUnavailable(ValueError):
    """A stored secret that cannot be turned back into the key; the message says why and what to do."""


def _fernet() -> Fernet:
    material = settings.PROCMEM_SECRETS_KEY or settings.SECRET_KEY
    digest = hashlib.sha256(b"procmem-secrets:" + material.encode("utf-8")).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def is_sealed(stored: str) -> bool:
    return not stored or stored.startswith((ENV_PREFIX, FERNET_PREFIX))


def seal_secret(raw: str) -> str:
    """What to store for `raw` (a key, or `env:NAME`). Raises ValueError for a bad reference or a
    key too long to store."""
    raw = (raw or "").strip()
    if not raw:
        return ""
    if raw.startswith(FERNET_PREFIX):
        return raw  # already sealed (a copy of a stored value)
    if raw.startswith(ENV_PREFIX):
        name = raw[len(ENV_PREFIX) :]
        if not ENV_NAME_RE.match(name):
            raise ValueError(f"{raw!r} is not an environment reference: use env:NAME with letters, digits and _")
        return ENV_PREFIX + name
    if len(raw) > MAX_SECRET_CHARS:
        raise ValueError(f"the key is longer than {MAX_SECRET_CHARS} characters")
    return FERNET_PREFIX + _fernet().encrypt(raw.encode("utf-8")).decode("ascii")


def resolve_secret(stored: str) -> str:
    """The key a stored value stands for ("" for none). Raises SecretUnavailable."""
    if not stored:
        return ""
    if stored.startswith(ENV_PREFIX):
        name = stored[len(ENV_PREFIX) :]
        value = os.environ.get(name, "")
        if not value:
            raise SecretUnavailable(
                f"the model API key is read from the environment variable {name}, which is unset or empty"
            )
        return value
    if stored.startswith(FERNET_PREFIX):
        try:
            return _fernet().decrypt(stored[len(FERNET_PREFIX) :].encode("ascii")).decode("utf-8")
        except (InvalidToken, ValueError):
            raise SecretUnavailable(
                "the stored model API key cannot be decrypted with the current PROCMEM_SECRETS_KEY (or SECRET_KEY); "
                "set the key again on the agent's eval settings page"
            ) from None
    return stored  # written before keys were sealed and not migrated (migrations seal every row)


def describe_secret(stored: str) -> str:
    """What the settings page may say about a stored value (never the key)."""
    if not stored:
        return "No key is stored."
    if stored.startswith(ENV_PREFIX):
        return f"The key is read from the environment variable {stored[len(ENV_PREFIX) :]}."
    return "A key is stored (encrypted)."
