"""The errors of the contract: generated from contract/errors.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate).

Oracle raises an error as ORA-<oracle_code>, PostgreSQL as SQLSTATE <sqlstate>; ctxasm.errors maps both
to the class named python_class.
"""

from __future__ import annotations

from typing import NamedTuple


class ContractError(NamedTuple):
    name: str
    number: int
    python_class: str
    message: str
    #: False for an error only Python raises (its number is reserved on both engines)
    engines: bool

    @property
    def sqlstate(self) -> str:
        return f"CX{self.number}"

    @property
    def oracle_code(self) -> int:
        return -20000 - self.number


CONTRACT_ERRORS: tuple[ContractError, ...] = (
    ContractError('tenant_not_set', 102, 'TenantNotSet', 'no tenant is set in this transaction', True),
    ContractError('invalid_memory_type', 103, 'InvalidMemoryType', 'not a memory type', True),
    ContractError('invalid_field', 104, 'InvalidField', 'a field is missing, of the wrong type, out of range or unknown', True),
    ContractError('duplicate_memory', 105, 'DuplicateMemory', 'the id already exists for the tenant', True),
    ContractError('memory_not_found', 106, 'MemoryNotFound', 'no active version of the id', True),
    ContractError('invalid_snapshot', 107, 'InvalidSnapshot', 'the snapshot does not parse', True),
    ContractError('invalid_argument', 108, 'InvalidArgument', 'a NULL or malformed argument', True),
    ContractError('unknown_intent', 110, 'UnknownIntent', "the intent is not one of the budget's shares", True),
    ContractError('budget_missing', 111, 'BudgetMissing', 'no context_budget guideline is in effect', True),
    ContractError('invalid_budget', 112, 'InvalidBudget', 'the budget is malformed', True),
    ContractError('invalid_question', 113, 'InvalidQuestion', 'the question is empty or too long', True),
    ContractError('invalid_manifest', 114, 'InvalidManifest', 'the manifest is malformed', True),
    ContractError('not_in_window', 115, 'NotInWindow', 'the memory id was not issued in the manifest', True),
    ContractError('source_unavailable', 116, 'SourceUnavailable', 'the source row version is no longer available', True),
    ContractError('tool_refused', 117, 'ToolRefused', "the tool's access policy does not admit the caller", False),
    ContractError('invalid_claim', 118, 'InvalidClaim', 'the tenant claim was refused', True),
    ContractError('scope_not_allowed', 119, 'ScopeNotAllowed', "the scope is not the one the session's claim names", True),
)

BY_NAME: dict[str, ContractError] = {error.name: error for error in CONTRACT_ERRORS}
