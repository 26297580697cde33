--liquibase formatted sql logicalFilePath:db/security/oracle/0020_vpd_policies.sql

-- One VPD policy <TABLE>_TENANT per memory table: every SELECT, INSERT, UPDATE and DELETE, by anyone
-- but SYS and holders of EXEMPT ACCESS POLICY (grant that to nobody), sees only the session's tenant;
-- update_check makes a write that would leave the tenant fail. Needs EXECUTE on SYS.DBMS_RLS.
-- DBMS_RLS.ADD_POLICY commits: these changesets run on their own, never inside a test transaction.

--changeset ctxasm:ora-sec-0020-01-guideline-memory-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy GUIDELINE_MEMORY_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'GUIDELINE_MEMORY',
      policy_name     => 'GUIDELINE_MEMORY_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'GUIDELINE_MEMORY', policy_name => 'GUIDELINE_MEMORY_TENANT'); end;

--changeset ctxasm:ora-sec-0020-02-persona-memory-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy PERSONA_MEMORY_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'PERSONA_MEMORY',
      policy_name     => 'PERSONA_MEMORY_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'PERSONA_MEMORY', policy_name => 'PERSONA_MEMORY_TENANT'); end;

--changeset ctxasm:ora-sec-0020-03-toolbox-memory-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy TOOLBOX_MEMORY_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'TOOLBOX_MEMORY',
      policy_name     => 'TOOLBOX_MEMORY_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'TOOLBOX_MEMORY', policy_name => 'TOOLBOX_MEMORY_TENANT'); end;

--changeset ctxasm:ora-sec-0020-04-entity-memory-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy ENTITY_MEMORY_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'ENTITY_MEMORY',
      policy_name     => 'ENTITY_MEMORY_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'ENTITY_MEMORY', policy_name => 'ENTITY_MEMORY_TENANT'); end;

--changeset ctxasm:ora-sec-0020-05-workflow-memory-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy WORKFLOW_MEMORY_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'WORKFLOW_MEMORY',
      policy_name     => 'WORKFLOW_MEMORY_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'WORKFLOW_MEMORY', policy_name => 'WORKFLOW_MEMORY_TENANT'); end;

--changeset ctxasm:ora-sec-0020-06-knowledge-base-document-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy KNOWLEDGE_BASE_DOCUMENT_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'KNOWLEDGE_BASE_DOCUMENT',
      policy_name     => 'KNOWLEDGE_BASE_DOCUMENT_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'KNOWLEDGE_BASE_DOCUMENT', policy_name => 'KNOWLEDGE_BASE_DOCUMENT_TENANT'); end;

--changeset ctxasm:ora-sec-0020-07-knowledge-base-chunk-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy KNOWLEDGE_BASE_CHUNK_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'KNOWLEDGE_BASE_CHUNK',
      policy_name     => 'KNOWLEDGE_BASE_CHUNK_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'KNOWLEDGE_BASE_CHUNK', policy_name => 'KNOWLEDGE_BASE_CHUNK_TENANT'); end;

--changeset ctxasm:ora-sec-0020-08-conversation-memory-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy CONVERSATION_MEMORY_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'CONVERSATION_MEMORY',
      policy_name     => 'CONVERSATION_MEMORY_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'CONVERSATION_MEMORY', policy_name => 'CONVERSATION_MEMORY_TENANT'); end;

--changeset ctxasm:ora-sec-0020-09-summarization-memory-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy SUMMARIZATION_MEMORY_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'SUMMARIZATION_MEMORY',
      policy_name     => 'SUMMARIZATION_MEMORY_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'SUMMARIZATION_MEMORY', policy_name => 'SUMMARIZATION_MEMORY_TENANT'); end;

--changeset ctxasm:ora-sec-0020-10-context-compression-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy CONTEXT_COMPRESSION_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'CONTEXT_COMPRESSION',
      policy_name     => 'CONTEXT_COMPRESSION_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'CONTEXT_COMPRESSION', policy_name => 'CONTEXT_COMPRESSION_TENANT'); end;

--changeset ctxasm:ora-sec-0020-11-context-source-ref-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: VPD policy CONTEXT_SOURCE_REF_TENANT
begin
   sys.dbms_rls.add_policy(
      object_schema   => sys_context('USERENV', 'CURRENT_SCHEMA'),
      object_name     => 'CONTEXT_SOURCE_REF',
      policy_name     => 'CONTEXT_SOURCE_REF_TENANT',
      function_schema => sys_context('USERENV', 'CURRENT_SCHEMA'),
      policy_function => 'CTX_POLICY.TENANT_PREDICATE',
      statement_types => 'SELECT,INSERT,UPDATE,DELETE',
      update_check    => true,
      policy_type     => sys.dbms_rls.context_sensitive
   );
end;
/
--rollback begin sys.dbms_rls.drop_policy(object_schema => sys_context('USERENV', 'CURRENT_SCHEMA'), object_name => 'CONTEXT_SOURCE_REF', policy_name => 'CONTEXT_SOURCE_REF_TENANT'); end;
