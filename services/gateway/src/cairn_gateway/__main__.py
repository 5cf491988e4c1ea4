"""`python -m cairn_gateway`: serve the REST API."""

import uvicorn

from cairn_gateway.app import create_app
from cairn_gateway.settings import GatewaySettings


def main() -> None:
    settings = GatewaySettings()  # scope_secret comes from the environment
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_graceful_shutdown=int(settings.shutdown_grace_seconds),
    )


if __name__ == "__main__":
    main()
