"""Graduation's pure parts: settings, the request contract, titles, workflow ids, failure mapping."""

import uuid

import pytest
from pydantic import ValidationError
from temporalio.exceptions import ActivityError, ApplicationError, RetryState

from cairn_contracts.errors import validation_code
from cairn_contracts.graduation import GraduateRequest
from cairn_graduation.activities import GATE_UNAVAILABLE, TITLE_CHARS, article_title
from cairn_graduation.settings import GraduationSettings
from cairn_graduation.trigger import failure_type
from cairn_graduation.worker import sweep_params
from cairn_graduation.workflows import graduation_workflow_id
from cairn_scope import generate_signing_key

VERIFY_KEYS = generate_signing_key("gateway.test")[1]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's environment must not change what the defaults are."""
    for name in GraduationSettings.model_fields:
        monkeypatch.delenv(f"CAIRN_{name.upper()}", raising=False)


class TestSettings:
    def test_defaults_follow_the_reference(self) -> None:
        s = GraduationSettings(scope_verify_keys=VERIFY_KEYS)
        assert (s.graduation_recall_threshold, s.graduation_max_per_run, s.graduation_scan_limit) == (
            3,
            50,
            500,
        )
        assert s.graduation_sweep_interval_seconds == 3600
        assert s.task_queue == "cairn-graduation"

    def test_a_batch_never_exceeds_the_per_run_budget(self) -> None:
        s = GraduationSettings(
            scope_verify_keys=VERIFY_KEYS, graduation_max_per_run=10, graduation_batch_size=50
        )
        assert s.graduation_batch_size == 10
        params = sweep_params(s)
        assert (params.max_per_run, params.batch_size, params.recall_threshold) == (10, 10, 3)

    @pytest.mark.parametrize(
        "field",
        ["graduation_recall_threshold", "graduation_max_per_run", "graduation_sweep_interval_seconds"],
    )
    def test_knobs_below_one_refuse_to_start(self, field: str) -> None:
        with pytest.raises(ValidationError):
            GraduationSettings(scope_verify_keys=VERIFY_KEYS, **{field: 0})

    def test_env_overrides(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("CAIRN_GRADUATION_RECALL_THRESHOLD", "5")
        assert GraduationSettings(scope_verify_keys=VERIFY_KEYS).graduation_recall_threshold == 5


def codes(body: object) -> str:
    with pytest.raises(ValidationError) as caught:
        GraduateRequest.model_validate(body)
    return validation_code([str(e["type"]) for e in caught.value.errors()])


class TestRequest:
    def test_a_uuid_is_normalised(self) -> None:
        raw = uuid.uuid4()
        assert GraduateRequest.model_validate({"memory_id": str(raw).upper()}).memory_id == str(raw)

    @pytest.mark.parametrize("bad", ["", "nope", 7, None, [], str(uuid.uuid4()) + "0"])
    def test_a_malformed_memory_id_is_invalid_memory_id(self, bad: object) -> None:
        assert codes({"memory_id": bad}) == "invalid_memory_id"

    def test_missing_memory_id_is_a_validation_error(self) -> None:
        assert codes({}) == "validation_error"

    @pytest.mark.parametrize("bad", ["project", "Global", 1, True, {}])
    def test_only_global_re_scopes(self, bad: object) -> None:
        assert codes({"memory_id": str(uuid.uuid4()), "re_scope": bad}) == "validation_error"

    def test_scope_fields_in_the_body_are_ignored(self) -> None:
        req = GraduateRequest.model_validate(
            {"memory_id": str(uuid.uuid4()), "re_scope": "global", "tenant_id": "x", "subject_id": "y"}
        )
        assert req.model_dump().keys() == {"memory_id", "re_scope"}


class TestTitle:
    def test_first_line_whitespace_collapsed(self) -> None:
        assert (
            article_title("\n  Deploys   happen\ton Tuesdays \nmore detail") == "Deploys happen on Tuesdays"
        )

    def test_long_text_is_cut_at_a_word(self) -> None:
        title = article_title("word " * 100)
        assert len(title) <= TITLE_CHARS
        assert title.endswith("…")
        assert not title[:-1].endswith(" ")

    def test_one_long_word_is_cut_hard(self) -> None:
        assert len(article_title("x" * 500)) == TITLE_CHARS


class TestWorkflowIds:
    def test_deterministic_per_tenant_subject_memory(self) -> None:
        t, m = str(uuid.uuid4()), str(uuid.uuid4())
        assert graduation_workflow_id(t, "a", m) == graduation_workflow_id(t, "a", m)
        others = {
            graduation_workflow_id(t, "b", m),
            graduation_workflow_id(t, "a", str(uuid.uuid4())),
            graduation_workflow_id(str(uuid.uuid4()), "a", m),
        }
        assert graduation_workflow_id(t, "a", m) not in others
        assert len(others) == 3
        assert graduation_workflow_id(t, "a", m).startswith(f"graduate-{t}-")


class TestFailureType:
    def test_the_root_application_error_type_is_found(self) -> None:
        root = ApplicationError("down", type=GATE_UNAVAILABLE, non_retryable=True)
        wrapped = ActivityError(
            "activity failed",
            scheduled_event_id=1,
            started_event_id=2,
            identity="w",
            activity_type="propose",
            activity_id="1",
            retry_state=RetryState.NON_RETRYABLE_FAILURE,
        )
        wrapped.__cause__ = root
        assert failure_type(wrapped) == GATE_UNAVAILABLE
        assert failure_type(RuntimeError("x")) is None
