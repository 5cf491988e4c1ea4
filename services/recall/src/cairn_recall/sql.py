"""Shared pieces of recall's constant SQL: the scope and partition predicates and their parameters.

Hot recall statements are constant `text()` SQL (built once, prepared once per connection): building and
compiling SQLAlchemy constructs per call, and walking them in the scope hook, cost more CPU than the
queries. Each names its scope in `:tenant_id` / `:subject_id`, which the engine hook requires of raw SQL
on a scoped table and turns into the transaction's row-level-security settings.
"""

import uuid
from typing import Any

from cairn_scope import Scope

SUBJECT = "m.tenant_id = :tenant_id AND m.subject_id = :subject_id"
SUBJECT_LIVE = f"{SUBJECT} AND m.superseded_by IS NULL"
# Global memories, plus the given project's (a foreign or unknown project is just an empty partition).
PARTITION = "(m.project_id IS NULL OR m.project_id = CAST(:project_id AS uuid))"


def scope_params(scope: Scope) -> dict[str, Any]:
    return {"tenant_id": uuid.UUID(scope.tenant_id), "subject_id": scope.subject_id}


def project_param(project_id: str | None) -> uuid.UUID | None:
    return uuid.UUID(project_id) if project_id else None
