"""Temporal holds only ciphertext of session content, workflows still complete, and the gateway's codec
endpoint decrypts for superadmins only."""

import base64
import uuid
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from cairn_devstack.cairn import CairnStack
from cairn_promotion.workflows import PromoteSession
from conftest import TenantHandle, bearer
from tests.bus_helpers import temporal_client
from tests.e2e.test_promotion import FACT_TURNS, add_turns, promote


@pytest.fixture(scope="module")
async def temporal(stack: CairnStack) -> Client:
    return await temporal_client(stack)


def codec_body(*payloads: tuple[dict[str, bytes], bytes]) -> dict[str, Any]:
    return {
        "payloads": [
            {
                "metadata": {k: base64.b64encode(v).decode() for k, v in meta.items()},
                "data": base64.b64encode(data).decode(),
            }
            for meta, data in payloads
        ]
    }


class TestHistoryIsEncrypted:
    async def test_history_holds_no_session_text_and_the_workflow_completes(
        self,
        stack: CairnStack,
        http: httpx.AsyncClient,
        tenant: TenantHandle,
        temporal: Client,
        admin_key: str,
    ) -> None:
        marker = f"port{uuid.uuid4().hex[:10]}"
        key = await tenant.agent()
        session_id = f"s-{uuid.uuid4()}"
        turns = [*FACT_TURNS, ("user", f"Our billing service is called {marker}.")]
        await add_turns(http, key, session_id, turns)
        accepted = await promote(http, key, session_id)
        handle = temporal.get_workflow_handle_for(PromoteSession.run, accepted["workflow_id"])
        result = await handle.result()
        assert result.status == "promoted"
        assert result.promoted >= 1

        # Raw history, read without the codec: every payload is ciphertext, the text is nowhere.
        raw = await Client.connect(stack.temporal_address, namespace=stack.temporal_namespace)
        history = await raw.get_workflow_handle(accepted["workflow_id"]).fetch_history()
        raw_bytes = b"".join(event.SerializeToString() for event in history.events)
        assert marker.encode() not in raw_bytes
        # Not the bare number: a worker's identity in the history is "<pid>@<host>", and a pid can be 6543.
        assert b"port 6543" not in raw_bytes
        assert b"staging database" not in raw_bytes
        assert b"binary/encrypted" in raw_bytes

        # The text *is* in that history: an operator with a superadmin key decrypts the activity results
        # through the codec endpoint and finds it (the compiled facts travel as an activity result).
        results = [
            p
            for e in history.events
            if e.HasField("activity_task_completed_event_attributes")
            for p in e.activity_task_completed_event_attributes.result.payloads
        ]
        body = codec_body(*((dict(p.metadata), p.data) for p in results))
        decoded = await http.post("/codec/decode", json=body, headers=bearer(admin_key))
        assert decoded.status_code == 200, decoded.text
        plain = [base64.b64decode(p["data"]) for p in decoded.json()["payloads"]]
        assert any(marker.encode() in data for data in plain)
        encodings = {base64.b64decode(p["metadata"]["encoding"]) for p in decoded.json()["payloads"]}
        assert encodings <= {b"json/plain", b"binary/null"}


class TestCodecEndpoint:
    PLAIN = ({"encoding": b"json/plain"}, b'{"text":"a session turn"}')

    async def test_round_trips_for_a_superadmin(self, http: httpx.AsyncClient, admin_key: str) -> None:
        encoded = await http.post("/codec/encode", json=codec_body(self.PLAIN), headers=bearer(admin_key))
        assert encoded.status_code == 200, encoded.text
        sealed = encoded.json()["payloads"][0]
        assert base64.b64decode(sealed["metadata"]["encoding"]) == b"binary/encrypted"
        assert b"session turn" not in base64.b64decode(sealed["data"])
        decoded = await http.post("/codec/decode", json=encoded.json(), headers=bearer(admin_key))
        assert decoded.status_code == 200, decoded.text
        assert decoded.json() == codec_body(self.PLAIN)

    @pytest.mark.parametrize("path", ["/codec/encode", "/codec/decode"])
    @pytest.mark.parametrize("role", ["agent", "user", "orchestrator"])
    async def test_refuses_tenant_keys(
        self, http: httpx.AsyncClient, tenant: TenantHandle, path: str, role: str
    ) -> None:
        key = await tenant.key(role, agent_id="a1" if role == "agent" else None)
        response = await http.post(path, json=codec_body(self.PLAIN), headers=bearer(key))
        assert response.status_code == 403, response.text
        assert response.json()["error"]["code"] == "forbidden"

    @pytest.mark.parametrize("path", ["/codec/encode", "/codec/decode"])
    async def test_refuses_no_key(self, http: httpx.AsyncClient, path: str) -> None:
        response = await http.post(path, json=codec_body(self.PLAIN))
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthenticated"

    async def test_a_tampered_payload_is_a_clear_422(self, http: httpx.AsyncClient, admin_key: str) -> None:
        encoded = (
            await http.post("/codec/encode", json=codec_body(self.PLAIN), headers=bearer(admin_key))
        ).json()
        data = bytearray(base64.b64decode(encoded["payloads"][0]["data"]))
        data[-1] ^= 1
        encoded["payloads"][0]["data"] = base64.b64encode(bytes(data)).decode()
        response = await http.post("/codec/decode", json=encoded, headers=bearer(admin_key))
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "payload_undecodable"

    async def test_an_unknown_key_id_is_a_clear_422(self, http: httpx.AsyncClient, admin_key: str) -> None:
        body = codec_body(({"encoding": b"binary/encrypted", "encryption-key-id": b"retired"}, b"x" * 40))
        response = await http.post("/codec/decode", json=body, headers=bearer(admin_key))
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "payload_undecodable"

    async def test_invalid_base64_is_a_validation_error(
        self, http: httpx.AsyncClient, admin_key: str
    ) -> None:
        response = await http.post(
            "/codec/decode", json={"payloads": [{"metadata": {}, "data": "%%%"}]}, headers=bearer(admin_key)
        )
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "validation_error"

    async def test_cors_preflight_allows_the_temporal_ui_only(
        self, http: httpx.AsyncClient, stack: CairnStack
    ) -> None:
        preflight = {
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        }
        ui = await http.options("/codec/decode", headers={"Origin": stack.temporal_ui_url, **preflight})
        assert ui.status_code == 200
        assert ui.headers["access-control-allow-origin"] == stack.temporal_ui_url
        other = await http.options("/codec/decode", headers={"Origin": "https://evil.example", **preflight})
        assert "access-control-allow-origin" not in other.headers
        # CORS covers the codec endpoint only: the UI's origin gets nothing from the memory API.
        api = await http.options("/api/v1/memory", headers={"Origin": stack.temporal_ui_url, **preflight})
        assert "access-control-allow-origin" not in api.headers
