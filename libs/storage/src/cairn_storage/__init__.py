"""Cairn storage: the PostgreSQL schema (SQLAlchemy models + Alembic) and engine setup."""

from cairn_storage.engine import asyncpg_url, create_engine, make_sessionmaker
from cairn_storage.migrate import upgrade
from cairn_storage.scope_hook import declare_maintenance, maintenance_sessionmaker

__all__ = [
    "asyncpg_url",
    "create_engine",
    "declare_maintenance",
    "maintenance_sessionmaker",
    "make_sessionmaker",
    "upgrade",
]
