"""Cairn memory service: the write side of long-term and session memory."""
