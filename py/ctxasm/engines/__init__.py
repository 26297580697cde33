"""The engines: the store interface over the contract routines, one adapter per database (PostgreSQL, Oracle),
the write path's checks, and the registry that picks an engine from the settings."""
