"""Cairn knowledge service: curated articles behind the novelty gate."""
