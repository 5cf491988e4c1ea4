"""Cairn contracts: the single source of truth for REST bodies, NATS messages and error codes."""
