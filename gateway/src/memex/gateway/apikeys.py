"""The gateway's bearer API keys, hashed at rest in one owner-only JSON file.

A key is 32 random bytes (``mx_`` + URL-safe base64) shown once when created; the file keeps only
its SHA-256. A slow hash (scrypt) protects guessable passwords; a 256-bit random token cannot be
guessed, so a fast hash loses nothing and keeps verification cheap on every request. The CLI
(`memex keys ...`) writes the file and the gateway reads it; both are surfaces, so it lives here.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from memex.shared.errors import AlreadyExists, InvalidArgument, NotFound

PREFIX = "mx_"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# The characters every store accepts in a tenant name (Weaviate's tenant names are the narrowest:
# letters, digits, '_' and '-', at most 64), so a key's tenant is usable on either backend.
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class ApiKey:
    """One stored key: its name, the SHA-256 of the token, and when it was made."""

    name: str
    sha256: str
    created_at: str
    # The first characters of the token, so a person can tell keys apart without the secret.
    hint: str
    # May read items marked sensitive when a request asks (issue 11). Files written before this
    # field existed load with False: no key gains a grant it was not given.
    sensitive: bool = False
    # The tenant whose memory the key sees, and no other's; "" is the deployment's default tenant
    # (the gateway's configured one), which is what files written before tenants meant.
    tenant: str = ""
    # May create, list and revoke keys for any tenant over HTTP (/v1/admin/keys).
    admin: bool = False


def hash_token(token: str) -> str:
    """The hex SHA-256 of a token, as stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def keys_path(data_dir: Path) -> Path:
    """Where the stack keeps its keys: ``<data_dir>/gateway/keys.json``."""
    return data_dir / "gateway" / "keys.json"


def load_keys(path: Path) -> list[ApiKey]:
    """The keys in ``path``; none when the file does not exist. A damaged file raises
    InvalidArgument saying which file, rather than silently granting or denying."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise InvalidArgument(f"cannot read the API key file {path}: {exc}") from exc
    try:
        return [ApiKey(**entry) for entry in raw["keys"]]
    except (KeyError, TypeError) as exc:
        raise InvalidArgument(f"the API key file {path} is not in the expected format") from exc


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Holds an exclusive lock beside ``path`` for a read-change-write: the CLI and the gateway's
    admin routes may both change the file, and neither may lose the other's key."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path.with_suffix(".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _save(path: Path, keys: list[ApiKey]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"keys": [asdict(k) for k in keys]}, f, indent=2)
    os.chmod(tmp, 0o600)  # O_CREAT's mode does not apply to a file left from a crashed write
    tmp.replace(path)


def check_name(name: str) -> None:
    """InvalidArgument saying what a key name may be, unless ``name`` is one."""
    if not NAME_PATTERN.match(name):
        raise InvalidArgument(
            f"key name {name!r} must be 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )


def check_tenant(tenant: str) -> None:
    """InvalidArgument saying what a tenant name may be, unless ``tenant`` is one ("" is the
    deployment's default tenant)."""
    if tenant and not TENANT_PATTERN.match(tenant):
        raise InvalidArgument(
            f"tenant {tenant!r} must be 1-64 letters, digits, '_' or '-', starting with a letter "
            "or digit (or empty for the deployment's default tenant)"
        )


def create_key(
    path: Path, name: str, sensitive: bool = False, *, tenant: str = "", admin: bool = False
) -> str:
    """Makes a key called ``name`` and returns its token (the only time it is ever shown);
    ``sensitive`` grants it reads of sensitive items, ``tenant`` is the only tenant it sees
    ("" the default one), ``admin`` lets it manage keys over HTTP."""
    return make_key(path, name, sensitive, tenant=tenant, admin=admin)[0]


def make_key(
    path: Path, name: str, sensitive: bool = False, *, tenant: str = "", admin: bool = False
) -> tuple[str, ApiKey]:
    """``create_key``, also returning the stored key (its hint and creation time)."""
    check_name(name)
    check_tenant(tenant)
    with _locked(path):
        keys = load_keys(path)
        if any(k.name == name for k in keys):
            raise AlreadyExists(
                f"a key named {name!r} exists; revoke it first or pick another name"
            )
        token = PREFIX + secrets.token_urlsafe(32)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        hint = token[: len(PREFIX) + 4]
        key = ApiKey(name, hash_token(token), stamp, hint, sensitive, tenant, admin)
        _save(path, [*keys, key])
    return token, key


def revoke_key(path: Path, name: str) -> None:
    """Removes the key called ``name``; NotFound when there is none."""
    with _locked(path):
        keys = load_keys(path)
        kept = [k for k in keys if k.name != name]
        if len(kept) == len(keys):
            raise NotFound(f"no key named {name!r}; `memex keys list` shows them")
        _save(path, kept)


def verify(keys: list[ApiKey], token: str) -> ApiKey | None:
    """The key ``token`` belongs to, or None. Compares every stored hash in constant time."""
    digest = hash_token(token)
    found = None
    for key in keys:
        if hmac.compare_digest(key.sha256, digest):
            found = key
    return found


class KeyRing:
    """The keys of one file, re-read when the file changes, so a key created or revoked with
    the CLI takes effect without restarting the gateway."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._keys: list[ApiKey] = []

    def keys(self) -> list[ApiKey]:
        """The current keys (cached until the file's mtime or size changes)."""
        try:
            st = self.path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._keys = load_keys(self.path) if stamp is not None else []
            self._stamp = stamp
        return self._keys

    def verify(self, token: str) -> ApiKey | None:
        """The key ``token`` belongs to, or None."""
        return verify(self.keys(), token)
