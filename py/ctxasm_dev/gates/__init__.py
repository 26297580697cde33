"""Static gates for the Oracle side, which no machine of this project can run (docs/oracle-gates.md).

oracle_parse      every Oracle statement parses with sqlfluff's oracle dialect; Liquibase layout rules
liquibase_render  Liquibase renders exactly the Oracle changesets offline (update-sql, no database)
contract_check    the Oracle package specs and the PostgreSQL functions declare the same routines
oracle_api        every call into Oracle-supplied code matches the signature table (oracle_signatures.json)
oracle_names      every identifier of the Oracle code resolves to a declaration, column or table entry
oracle_semantics  SQL semantics and Oracle's limits: what the compiler and DDL would refuse
contract_generated every file generated from the contract catalogue (contract/*.toml) is current
"""
