"""Scope: who a request acts for, how it travels between services, and how queries stay inside it."""

from cairn_scope.derive import KeyIdentity, derive_scope, derive_subject
from cairn_scope.guard import (
    SCOPED_TABLES,
    ScopeGuardError,
    check_scoped,
    scoped_delete,
    scoped_select,
    scoped_update,
)
from cairn_scope.model import Scope
from cairn_scope.signing import (
    SCOPE_HEADER,
    SIGNATURE_HEADER,
    ScopeSigner,
    ScopeVerifier,
    generate_signing_key,
)

__all__ = [
    "SCOPED_TABLES",
    "SCOPE_HEADER",
    "SIGNATURE_HEADER",
    "KeyIdentity",
    "Scope",
    "ScopeGuardError",
    "ScopeSigner",
    "ScopeVerifier",
    "check_scoped",
    "derive_scope",
    "derive_subject",
    "generate_signing_key",
    "scoped_delete",
    "scoped_select",
    "scoped_update",
]
