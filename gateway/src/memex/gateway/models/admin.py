"""The bodies of /v1/admin/keys: a key to make, the key made (its token shown once), and the keys
listed without their secrets."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memex.gateway.models.common import Strict


class KeyCreate(Strict):
    name: str = Field(
        max_length=64, description="1-64 letters, digits, '.', '_' or '-'; unique per gateway."
    )
    tenant: str = Field(
        "",
        max_length=64,
        description="The only tenant the key sees: 1-64 letters, digits, '_' or '-'. Empty: the "
        "deployment's default tenant.",
    )
    sensitive: bool = Field(False, description="May read items marked sensitive when asked.")
    admin: bool = Field(False, description="May manage keys for any tenant (these routes).")


class KeyInfo(BaseModel):
    """A key without its secret."""

    name: str
    tenant: str = Field(description="Empty: the deployment's default tenant.")
    hint: str = Field(description="The token's first characters, to tell keys apart.")
    created_at: str
    sensitive: bool
    admin: bool


class KeyCreated(KeyInfo):
    token: str = Field(description="The bearer token: shown this once, never stored.")


class KeyList(BaseModel):
    keys: list[KeyInfo]
