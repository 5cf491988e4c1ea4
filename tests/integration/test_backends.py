"""The test-backend switch: each mode says clearly when it cannot run (no stack is started here)."""

from contextlib import ExitStack

import pytest

from tests.backends import BackendSettings, BackendUnavailable, external_services


async def test_embedded_is_the_default_and_starts_nothing_external(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CAIRN_TEST_BACKEND", "CAIRN_DATABASE_URL", "CAIRN_NATS_URL", "CAIRN_TEMPORAL_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    settings = BackendSettings()
    assert settings.backend() == "embedded"
    with ExitStack() as cleanup:
        assert await external_services(settings, cleanup) is None


async def test_external_uses_the_given_services_and_names_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CAIRN_TEST_BACKEND", "external")
    monkeypatch.setenv("CAIRN_DATABASE_URL", "postgresql://u@db.example:5432/cairn")
    monkeypatch.delenv("CAIRN_NATS_URL", raising=False)
    monkeypatch.delenv("CAIRN_TEMPORAL_ADDRESS", raising=False)
    with ExitStack() as cleanup, pytest.raises(BackendUnavailable) as refused:
        await external_services(BackendSettings(), cleanup)
    assert "CAIRN_NATS_URL, CAIRN_TEMPORAL_ADDRESS" in str(refused.value)

    monkeypatch.setenv("CAIRN_NATS_URL", "nats://nats.example:4222")
    monkeypatch.setenv("CAIRN_TEMPORAL_ADDRESS", "temporal.example:7233")
    with ExitStack() as cleanup:
        services = await external_services(BackendSettings(), cleanup)
    assert services is not None
    assert (services.database_url, services.nats_url, services.temporal_address) == (
        "postgresql://u@db.example:5432/cairn",
        "nats://nats.example:4222",
        "temporal.example:7233",
    )


async def test_all_three_urls_without_a_backend_still_mean_external(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAIRN_TEST_BACKEND", raising=False)
    monkeypatch.setenv("CAIRN_DATABASE_URL", "postgresql://u@db.example:5432/cairn")
    monkeypatch.setenv("CAIRN_NATS_URL", "nats://nats.example:4222")
    monkeypatch.setenv("CAIRN_TEMPORAL_ADDRESS", "temporal.example:7233")
    assert BackendSettings().backend() == "external"


async def test_testcontainers_without_a_docker_daemon_fails_at_once_saying_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A socket nobody listens on, so this holds on a machine that does run Docker too.
    missing = tmp_path_factory.mktemp("no-docker") / "docker.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{missing}")
    monkeypatch.setenv("CAIRN_TEST_BACKEND", "testcontainers")
    with ExitStack() as cleanup, pytest.raises(BackendUnavailable) as refused:
        await external_services(BackendSettings(), cleanup)
    message = str(refused.value)
    assert "needs a running Docker daemon" in message
    assert "unset CAIRN_TEST_BACKEND" in message


def test_an_unknown_backend_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_TEST_BACKEND", "kubernetes")
    with pytest.raises(ValueError, match="test_backend"):
        BackendSettings()
