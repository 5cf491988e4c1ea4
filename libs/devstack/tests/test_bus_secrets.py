"""The NATS authorization the deploy overlays ship is the one `cairn_contracts.bus` defines."""

import subprocess
from pathlib import Path

from cairn_contracts.bus import PRINCIPALS
from cairn_devstack.binaries import find_binary
from cairn_devstack.bus_secrets import BusSecrets, nats_config_with_variables, password_variable

DEV_NATS_CONFIG = (
    Path(__file__).resolve().parents[3] / "deploy" / "k8s" / "overlays" / "dev" / "nats-auth.conf"
)


def test_the_dev_overlays_nats_config_is_generated_from_the_contracts() -> None:
    assert DEV_NATS_CONFIG.read_text() == nats_config_with_variables(), (
        "regenerate: python -m cairn_devstack.bus_secrets > deploy/k8s/overlays/dev/nats-auth.conf"
    )


def test_nats_server_accepts_the_generated_config(tmp_path: Path) -> None:
    config = tmp_path / "nats.conf"
    config.write_text(nats_config_with_variables())
    env = {password_variable(name): "x" for name in PRINCIPALS}
    checked = subprocess.run(
        [str(find_binary("nats-server")), "-t", "-c", str(config)], env=env, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


def test_only_signers_get_a_private_key_and_only_temporal_users_the_payload_key() -> None:
    secrets = BusSecrets.generate()
    holders = {name for name in PRINCIPALS if "CAIRN_SCOPE_SIGNING_KEY" in secrets.service_env(name)}
    assert holders == {"gateway", "recall", "promotion", "graduation"}
    payload = {name for name in PRINCIPALS if "CAIRN_PAYLOAD_KEYS" in secrets.service_env(name)}
    assert payload == {"gateway", "promotion", "graduation"}
    for name in PRINCIPALS:
        assert secrets.service_env(name)["CAIRN_NATS_USER"] == name
