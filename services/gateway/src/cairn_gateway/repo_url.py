"""Normalise the repository forms agents know to one `owner/repo` key."""

import re

_FORMS = (
    re.compile(r"^git@[^:]+:(?P<path>.+)$"),  # git@github.com:owner/repo.git
    re.compile(r"^(?:https?|ssh|git)://(?:[^@/]+@)?[^/]+/(?P<path>.+)$"),  # https://github.com/owner/repo
    re.compile(r"^(?P<path>[^/:\s]+/[^/:\s]+)$"),  # owner/repo
)


def repo_key(url: str) -> str | None:
    """`owner/repo` in lower case, or None when `url` is none of the accepted forms."""
    value = url.strip()
    for form in _FORMS:
        match = form.match(value)
        if match:
            path = match.group("path").strip("/")
            path = path.removesuffix(".git").strip("/")
            parts = path.split("/")
            if len(parts) >= 2 and all(parts[-2:]):
                return f"{parts[-2]}/{parts[-1]}".lower()
    return None
