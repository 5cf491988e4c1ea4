"""`python -m cairn_gateway`: serve the REST API."""

import uvicorn

from cairn_gateway.app import create_app
from cairn_gateway.settings import GatewaySettings
from cairn_observability import TelemetrySettings, setup_telemetry, shutdown_tracing


def main() -> None:
    settings = GatewaySettings()  # scope keys come from the environment
    setup_telemetry("gateway", TelemetrySettings(log_level=settings.log_level))
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        loop="uvloop",  # libuv's loop and the C HTTP parser: measured cheaper per request (docs/performance.md)
        http="httptools",
        log_level="warning",
        log_config=None,  # uvicorn's records go through the JSON (or console) handler setup_telemetry installed
        timeout_graceful_shutdown=int(settings.shutdown_grace_seconds),
        # Idle keep-alive connections outlive the client's: httpx and most load balancers drop theirs at
        # 5-60 s, and with uvicorn's default 5 s both sides closed at once, so a request sent on a connection
        # the server was just closing failed with a ReadError (seen under load in test_limits).
        timeout_keep_alive=75,
    )
    shutdown_tracing()


if __name__ == "__main__":
    main()
