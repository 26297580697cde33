"""The local PostgreSQL: the embedded cluster, targets, roles and connections, deployment with Liquibase."""
