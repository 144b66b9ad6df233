"""Keys bound to tenants (issue 14): the key file's tenant and admin fields, the `tenant`
dependency every /v1 route scopes its requests with, and the admin key routes."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import grpc
import httpx
import pytest
from starlette.requests import Request

from memex.cli.main import main
from memex.gateway import apikeys, security
from memex.gateway.apikeys import KeyRing
from memex.gateway.config import GatewaySettings
from memex.gateway.errors import ApiError
from memex.gateway.security import Guard, RateLimiter
from memex.shared.errors import InvalidArgument

from .support.harness import running_gateway


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_key_file_from_before_tenants_loads_as_the_default_tenant(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    old = {"name": "laptop", "sha256": "ab" * 32, "created_at": "2026-01-01T00:00:00Z"}
    path.write_text(json.dumps({"keys": [{**old, "hint": "mx_abcd"}]}))
    [key] = apikeys.load_keys(path)
    assert (key.tenant, key.admin, key.sensitive) == ("", False, False)
    apikeys.create_key(path, "alice-phone", tenant="alice", admin=True)
    _, made = apikeys.load_keys(path)
    assert (made.tenant, made.admin) == ("alice", True)


@pytest.mark.parametrize("tenant", ["has space", "a.b", "-lead", "x" * 65, "ünï"])
def test_tenant_names_are_checked(tmp_path: Path, tenant: str) -> None:
    with pytest.raises(InvalidArgument, match="letters, digits, '_' or '-'"):
        apikeys.create_key(tmp_path / "keys.json", "k", tenant=tenant)
    assert apikeys.load_keys(tmp_path / "keys.json") == []


def test_keys_create_takes_a_tenant_and_the_admin_grant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMEX_DATA_DIR", str(tmp_path))
    for args in (["boss", "--admin"], ["bob-laptop", "--tenant", "bob", "--sensitive"]):
        with pytest.raises(SystemExit) as exited:
            main(["keys", "create", *args])
        assert exited.value.code == 0
    with pytest.raises(SystemExit) as exited:
        main(["keys", "create", "x", "--tenant", "no/slash"])
    assert exited.value.code == 2 and "tenant 'no/slash'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["keys", "list", "--json"])
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["keys"]}
    assert (rows["boss"]["tenant"], rows["boss"]["admin"]) == ("", True)
    assert rows["bob-laptop"] | {"hint": "", "created_at": ""} == {
        "name": "bob-laptop",
        "tenant": "bob",
        "hint": "",
        "created_at": "",
        "sensitive": True,
        "admin": False,
    }
    with pytest.raises(SystemExit):
        main(["keys", "list"])
    table = capsys.readouterr().out
    assert "(default)" in table and "admin" in table and "bob" in table


def test_every_request_carries_the_callers_tenant(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    alice = apikeys.create_key(keys, "alice", tenant="alice")
    plain = apikeys.create_key(keys, "plain")
    with (
        running_gateway(tmp_path, tenant="home", rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url) as c,
    ):
        seen = g.orchestrator.reads
        for headers, tenant in ((bearer(alice), "alice"), (bearer(plain), "home"), ({}, "home")):
            assert c.post("/v1/search", json={"query": "q"}, headers=headers).status_code == 200
            assert seen[-1].tenant == tenant
            turn = c.post("/v1/turns", json={"text": "q"}, headers=headers)
            assert turn.status_code == 202
            assert g.orchestrator.turn_requests[-1].tenant == tenant
            assert c.post("/v1/ask", json={"question": "q"}, headers=headers).status_code == 200
            assert g.orchestrator.ask_requests[-1].tenant == tenant
        # No body can name another tenant: request bodies refuse unknown fields.
        asked = c.post("/v1/search", json={"query": "q", "tenant": "bob"}, headers=bearer(alice))
        assert asked.status_code == 400 and "tenant" in asked.json()["error"]["message"]
        # nor any query: one that names a tenant is not a parameter of any route
        listed = c.post("/v1/search?tenant=bob", json={"query": "q"}, headers=bearer(alice))
        assert listed.status_code == 200 and seen[-1].tenant == "alice"


def test_admin_keys_manage_keys_for_any_tenant(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    boss = apikeys.create_key(keys, "boss", admin=True)
    alice = apikeys.create_key(keys, "alice", tenant="alice")
    with (
        running_gateway(tmp_path, require_keys=True, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url) as c,
    ):
        for method, path in (("POST", "/v1/admin/keys"), ("GET", "/v1/admin/keys")):
            body = {"name": "sneaky", "tenant": "bob"} if method == "POST" else None
            refused = c.request(method, path, json=body, headers=bearer(alice))
            assert refused.status_code == 403
            assert "--admin" in refused.json()["error"]["message"]
            assert c.request(method, path, json=body).status_code == 401  # keyless, keys required
        assert c.delete("/v1/admin/keys/boss", headers=bearer(alice)).status_code == 403

        made = c.post("/v1/admin/keys", json={"name": "bob", "tenant": "bob"}, headers=bearer(boss))
        assert made.status_code == 201, made.text
        created = made.json()
        assert (created["tenant"], created["admin"], created["sensitive"]) == ("bob", False, False)
        token = created["token"]
        assert token.startswith(created["hint"]) and token not in keys.read_text()
        assert c.post("/v1/search", json={"query": "q"}, headers=bearer(token)).status_code == 200
        assert g.orchestrator.reads[-1].tenant == "bob"

        again = c.post("/v1/admin/keys", json={"name": "bob"}, headers=bearer(boss))
        assert again.status_code == 409
        for bad in ({"name": "no spaces"}, {"name": "ok", "tenant": "a.b"}):
            answer = c.post("/v1/admin/keys", json=bad, headers=bearer(boss))
            assert answer.status_code == 400, bad
            assert "letters, digits" in answer.json()["error"]["message"]

        listed = c.get("/v1/admin/keys", headers=bearer(boss)).json()["keys"]
        assert {k["name"]: k["tenant"] for k in listed} == {
            "boss": "",
            "alice": "alice",
            "bob": "bob",
        }
        assert "token" not in json.dumps(listed) and "sha256" not in json.dumps(listed)
        assert c.delete("/v1/admin/keys/bob", headers=bearer(boss)).status_code == 204
        assert c.delete("/v1/admin/keys/bob", headers=bearer(boss)).status_code == 404
        assert c.post("/v1/search", json={"query": "q"}, headers=bearer(token)).status_code == 401


def test_a_keyless_loopback_owner_may_manage_keys_where_keys_are_optional(tmp_path: Path) -> None:
    with running_gateway(tmp_path, rate_limit_per_minute=0) as g, httpx.Client(base_url=g.url) as c:
        made = c.post("/v1/admin/keys", json={"name": "phone", "tenant": "alice"})
        assert made.status_code == 201
        assert [k.tenant for k in apikeys.load_keys(tmp_path / "keys.json")] == ["alice"]


async def test_a_keyless_caller_off_loopback_is_neither_admin_nor_another_tenant(
    tmp_path: Path,
) -> None:
    # Keys optional but the caller not on loopback (a gateway behind a proxy, say): it keeps
    # the default tenant and gets no grants, so the admin routes refuse it.
    settings = GatewaySettings(keys_file=tmp_path / "keys.json", tenant="home")
    guard = Guard(KeyRing(settings.keys_file), required=False, limiter=RateLimiter(0, 1))
    app = SimpleNamespace(state=SimpleNamespace(guard=guard, settings=settings))
    request = Request({"type": "http", "client": ("10.1.2.3", 5), "app": app, "headers": []})
    who = await security.caller(request, None)
    assert who == "client:10.1.2.3" and await security.tenant(request, who) == "home"
    with pytest.raises(ApiError) as refused:
        await security.admin(request, who)
    assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED


def test_metrics_which_count_every_tenant_are_not_for_a_tenants_key(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    alice = apikeys.create_key(keys, "alice", tenant="alice")
    prometheus = apikeys.create_key(keys, "prometheus")
    boss = apikeys.create_key(keys, "boss", tenant="ops", admin=True)
    with (
        running_gateway(tmp_path, require_keys=True, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url) as c,
    ):
        refused = c.get("/metrics", headers=bearer(alice))
        assert refused.status_code == 403 and "--tenant" in refused.json()["error"]["message"]
        assert c.get("/metrics", headers=bearer(prometheus)).status_code == 200
        assert c.get("/metrics", headers=bearer(boss)).status_code == 200
        assert c.get("/metrics").status_code == 401
