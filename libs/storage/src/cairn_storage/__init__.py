"""Cairn storage: the PostgreSQL schema (SQLAlchemy models + Alembic) and engine setup."""

from cairn_storage.engine import asyncpg_url, create_engine, make_sessionmaker
from cairn_storage.migrate import upgrade

__all__ = ["asyncpg_url", "create_engine", "make_sessionmaker", "upgrade"]
