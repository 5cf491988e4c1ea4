"""Cairn recall service: the read side of long-term memory."""
