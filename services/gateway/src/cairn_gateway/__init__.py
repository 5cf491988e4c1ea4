"""Cairn gateway: the only place an API key becomes a Scope."""
