"""Cairn promotion service: Temporal workflows (the workflows themselves arrive with their issue)."""
