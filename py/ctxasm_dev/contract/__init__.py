"""The contract catalogue (contract/*.toml at the repository root) and the files generated from it.

catalogue  reads and checks the TOML files
targets    where every generated file or generated value lives (one table, to repoint after a move)
errors     CTX_ERRORS (Oracle spec and body), ctxasm.error_code / error_message (PostgreSQL),
           py/ctxasm/error_classes.py (one exception class per error)
types      py/ctxasm/memory_types.py, the catalogue-only columns' DDL, the docs/contract.md tables, the memory-type
           registry changeset, the scenario schema's type enum
unions     the per-type memory-row shapes (slot -> column, extra) and the PostgreSQL views, union and lists made of them
unions_oracle  the Oracle per-type unions and lists: select_window's memory_rows, erased_now and slice CASE,
           expand, purge_tenant, inventory, the VPD policy file
constants  the co_<name> declarations of the packages and py/ctxasm/contract_constants.py
versions   selection_version and the renderer's version: digests of the code they version
generate   python -m ctxasm_dev.contract.generate: writes them all
"""
