"""Property-based API testing: schemathesis generates requests for every operation of the live gateway's
OpenAPI document (valid and invalid ones, then linked sequences), sends them with real keys and checks each
answer: no 5xx, status and body as the document declares, every 4xx in the error envelope.

The CI budget is small (`CAIRN_FUZZ_MAX_EXAMPLES`, default 15 per operation and mode); `./task fuzz` runs
the same test with a larger one and shrinking on.
"""

import asyncio
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Flaky, Unsatisfiable
from pydantic_settings import BaseSettings, SettingsConfigDict
from schemathesis import Case, GenerationMode, Response
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle


class FuzzSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAIRN_FUZZ_", extra="ignore")
    max_examples: int = 15  # per operation and generation mode
    stateful_examples: int = 15  # linked sequences
    shrink: bool = False  # CI wants the first failure fast; `task fuzz` shrinks to a minimal one
    timeout_seconds: int = 900


pytestmark = pytest.mark.timeout(FuzzSettings().timeout_seconds)


@dataclass
class Keys:
    agent: str
    admin: str
    tenant_id: str  # the agent's tenant
    admin_tenant_id: str  # what admin routes may reconfigure (providers, limits) instead of the agent's

    def headers_for(self, case: Case) -> dict[str, str]:
        """Admin routes get the superadmin key, acting in the fuzz tenant where a route needs a tenant;
        every other route gets the agent key."""
        operation = case.operation
        superadmin = (
            "admin" in (operation.tags or [])
            or operation.path.startswith("/codec/")  # the Temporal UI's payload codec: superadmin only
            or (operation.method.upper() == "DELETE" and operation.path.startswith("/api/v1/knowledge/"))
        )
        if not superadmin:
            return {"Authorization": f"Bearer {self.agent}"}
        return {"Authorization": f"Bearer {self.admin}", "X-Impersonate-Tenant": self.tenant_id}


@dataclass
class Tally:
    examples: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    by_operation: Counter[tuple[str, int]] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    stateful_requests: int = 0
    stateful_stopped_early: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, case: Case, response: Response) -> None:
        with self.lock:
            self.examples[case.operation.label] += 1
            self.statuses[response.status_code] += 1
            self.by_operation[(case.operation.label, response.status_code)] += 1

    def fail(self, message: str) -> None:
        with self.lock:
            if message not in self.failures:
                self.failures.append(message)


@schemathesis.check
def error_envelope(ctx: schemathesis.CheckContext, response: Response, case: Case) -> bool | None:
    """Every 4xx is `{"error": {"code", "message", "status"}}` with the response's own status."""
    if not 400 <= response.status_code < 500:
        return None
    body = response.json()
    assert isinstance(body, dict), f"4xx body is not an object: {response.text[:200]}"
    assert set(body) == {"error"}, f"4xx body has keys {sorted(body)}"
    error = body["error"]
    assert isinstance(error, dict), f"error is not an object: {error!r}"
    assert set(error) == {"code", "message", "status"}, f"error has keys {sorted(error)}"
    assert isinstance(error["code"], str), f"error code {error['code']!r}"
    assert error["code"], "empty error code"
    assert isinstance(error["message"], str), f"error message {error['message']!r}"
    assert error["status"] == response.status_code, f"error.status {error['status']} != HTTP status"
    return True


CHECKS = [status_code_conformance, content_type_conformance, response_schema_conformance, error_envelope]


def _call(case: Case, keys: Keys) -> Response:
    # The route's own key replaces whatever Authorization the generator put in.
    case.headers = {**(case.headers or {}), **keys.headers_for(case)}
    # Stateful runs learn the agent's tenant id (whoami) and would point its providers at a dead endpoint;
    # admin writes go to a tenant of their own, so the agent routes keep testing a working tenant.
    if case.path_parameters and case.path_parameters.get("tenant_id") == keys.tenant_id:
        case.path_parameters["tenant_id"] = keys.admin_tenant_id
    return case.call(timeout=30)


# The readiness probe's 503 is its answer ("a dependency is not ready", declared with its report), not a
# server error: a loaded machine makes one of its checks miss the 1.5 s deadline now and then.
READINESS = "GET /readyz"


def _validate(case: Case, response: Response, tally: Tally) -> None:
    tally.record(case, response)
    readiness_answer = case.operation.label == READINESS and response.status_code == 503
    assert response.status_code < 500 or readiness_answer, (
        f"server error {response.status_code}: {response.text[:300]}\n{case.as_curl_command()[:2000]}"
    )
    case.validate_response(response, checks=CHECKS)


def _hypothesis_settings(max_examples: int, shrink: bool) -> settings:
    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        phases=phases,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )


def _has_inputs(operation: Any) -> bool:
    return bool(list(operation.iter_parameters())) or bool(operation.body)


def run_operations(schema: Any, keys: Keys, config: FuzzSettings, tally: Tally) -> int:
    """Every operation, positive then negative generation; returns how many operations there were."""
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @_hypothesis_settings(config.max_examples, config.shrink)
            def fuzz_one(case: Case) -> None:
                _validate(case, _call(case, keys), tally)

            try:
                fuzz_one()
            except Unsatisfiable:
                # Nothing to negate: the operation takes no parameters and no body.
                assert mode is GenerationMode.NEGATIVE, operation.label
                assert not _has_inputs(operation), operation.label
            except Exception as exc:  # one operation's failure must not hide the others'
                tally.fail(f"{operation.label} [{mode.value}]: {type(exc).__name__}: {exc}")
    return operations


def run_stateful(schema: Any, keys: Keys, config: FuzzSettings, tally: Tally) -> None:
    """Linked sequences (OpenAPI links plus what schemathesis infers): create, then read / change / delete."""
    base = schema.as_state_machine()

    class Machine(base):  # type: ignore[misc, valid-type]
        def call(self, case: Case, **kwargs: Any) -> Response:
            return _call(case, keys)

        def validate_response(self, response: Response, case: Case, *_: Any, **__: Any) -> None:
            # Recorded, not raised: a replayed sequence meets changed server state (the resources it
            # created exist now), which Hypothesis would report as flaky instead of the real failure.
            tally.stateful_requests += 1
            try:
                _validate(case, response, tally)
            except Exception as exc:
                tally.fail(f"stateful {case.operation.label}: {type(exc).__name__}: {exc}")

    try:
        Machine.run(settings=_hypothesis_settings(config.stateful_examples, config.shrink))
    except Flaky:
        # Failures are recorded above, never raised, so this can only be Hypothesis noticing that a rule's
        # inputs depend on server state (a bundle filled differently this time): the run simply ends early,
        # as schemathesis' own runner treats it.
        tally.stateful_stopped_early = True


async def test_schemathesis_finds_no_failures(
    stack: CairnStack,
    admin_key: str,
    tenant: TenantHandle,
    new_tenant: Callable[[], Awaitable[TenantHandle]],
    record_property: Callable[[str, object], None],
    request: pytest.FixtureRequest,
) -> None:
    config = FuzzSettings()
    admin_tenant = await new_tenant()
    keys = Keys(
        agent=await tenant.agent("fuzz-agent"),
        admin=admin_key,
        tenant_id=tenant.id,
        admin_tenant_id=admin_tenant.id,
    )
    schema = schemathesis.openapi.from_url(f"{stack.gateway_url}/openapi.json")
    tally = Tally()

    def run() -> int:
        operations = run_operations(schema, keys, config, tally)
        run_stateful(schema, keys, config, tally)
        return operations

    operations = await asyncio.to_thread(run)
    examples = sum(tally.examples.values())
    summary = (
        f"schemathesis: {operations} operations, {examples} requests "
        f"({config.max_examples} examples per operation and mode; {tally.stateful_requests} of them in "
        f"{config.stateful_examples} stateful scenarios"
        f"{', stopped early on state-dependent generation' if tally.stateful_stopped_early else ''}), "
        f"statuses {dict(sorted(tally.statuses.items()))}, {len(tally.failures)} failures"
    )
    record_property("schemathesis", summary)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(summary)
    assert operations >= 30, summary
    untested = [label for label, n in tally.examples.items() if n == 0]
    assert not untested, untested
    assert not tally.failures, "\n\n".join(tally.failures)
