"""The `cairn` command (being built; `cairn-admin` delegates to the old operator CLI meanwhile)."""

import sys


def admin_main() -> None:
    from cairn_gateway.cli import main as legacy

    sys.exit(legacy())


def main() -> None:
    admin_main()
