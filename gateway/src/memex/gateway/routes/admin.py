"""Key management over HTTP for an admin key: make, list and revoke keys for any tenant. The same
file and rules as `memex keys`, so a key made either way works at once in both."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Path, Response

from memex.gateway import apikeys
from memex.gateway.deps import ERRORS, SettingsDep
from memex.gateway.models.admin import KeyCreate, KeyCreated, KeyInfo, KeyList
from memex.gateway.security import admin

router = APIRouter(
    prefix="/v1/admin", tags=["admin"], dependencies=[Depends(admin)], responses=ERRORS
)
KeyName = Path(min_length=1, max_length=64, description="A key's name.")


def _info(key: apikeys.ApiKey) -> KeyInfo:
    return KeyInfo(
        name=key.name,
        tenant=key.tenant,
        hint=key.hint,
        created_at=key.created_at,
        sensitive=key.sensitive,
        admin=key.admin,
    )


@router.post("/keys", status_code=201, response_model=KeyCreated, summary="Make a key")
async def create_key(s: SettingsDep, body: KeyCreate) -> KeyCreated:
    """Makes a key for a tenant and returns its token, the only time it is shown. 400 for a bad
    name or tenant, 409 when the name is taken; 403 unless the caller's key is an admin's."""
    token, made = await asyncio.to_thread(
        apikeys.make_key,
        s.keys_file,
        body.name,
        body.sensitive,
        tenant=body.tenant,
        admin=body.admin,
    )
    return KeyCreated(**_info(made).model_dump(), token=token)


@router.get("/keys", response_model=KeyList, summary="List keys")
async def list_keys(s: SettingsDep) -> KeyList:
    """Every key of every tenant, without secrets."""
    keys = await asyncio.to_thread(apikeys.load_keys, s.keys_file)
    return KeyList(keys=[_info(k) for k in keys])


@router.delete("/keys/{name}", status_code=204, response_class=Response, summary="Revoke a key")
async def revoke_key(s: SettingsDep, name: str = KeyName) -> Response:
    """Deletes a key; its callers get 401 from then on. 404 for an unknown name."""
    await asyncio.to_thread(apikeys.revoke_key, s.keys_file, name)
    return Response(status_code=204)
