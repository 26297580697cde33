--liquibase formatted sql

-- utPLSQL v3 suite for the schema as deployed: the Oracle Text indexes exist, are usable and filter by the
-- tenant, and the columns they filter by fit Oracle Text's 249 bytes whatever the session's length semantics.
-- The first deployment stopped at the first CONTEXT index (ORA-29855 / DRG-11309: tenant_id varchar2(64) under
-- NLS_LENGTH_SEMANTICS=CHAR is 256 bytes in AL32UTF8); the gate oracle_semantics (rule text-filter) reads the
-- same from the files. Reads the dictionary only, so the automatic rollback is enough.

--changeset ctxasm:ora-test-0040-01-test-schema-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package test_schema authid definer is
   --%suite(the schema as deployed: Oracle Text indexes and the widths of their columns)
   --%suitepath(ctxasm.oracle)

   --%test(the six CONTEXT indexes exist, are VALID and filter by TENANT_ID)
   procedure text_indexes_filter_by_tenant;

   --%test(no FILTER BY column of a CONTEXT index is wider than 249 bytes; tenant_id there is in bytes)
   procedure text_filter_columns_fit;
end test_schema;
/

--changeset ctxasm:ora-test-0040-02-test-schema-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body test_schema is
   co_structured_bytes constant pls_integer := 249;

   procedure text_indexes_filter_by_tenant is
      l_expect   ut_expectation;
      l_valid    number;
      l_filtered number;
   begin
      select count(*)
        into l_valid
        from user_indexes i
       where i.ityp_name = 'CONTEXT'
         and i.status = 'VALID'
         and i.domidx_opstatus = 'VALID'
         and i.index_name in ('KNOWLEDGE_BASE_DOCUMENT_TEXT_IX', 'KNOWLEDGE_BASE_CHUNK_TEXT_IX',
                              'ENTITY_MEMORY_TEXT_IX', 'WORKFLOW_MEMORY_TEXT_IX', 'CONVERSATION_MEMORY_TEXT_IX',
                              'SUMMARIZATION_MEMORY_TEXT_IX');
      l_expect := ut.expect(l_valid);
      l_expect.to_equal(6);
      select count(*)
        into l_filtered
        from ctx_filter_by_columns f
       where f.fbc_index_owner = user
         and f.fbc_column_name = 'TENANT_ID';
      l_expect := ut.expect(l_filtered);
      l_expect.to_equal(l_valid);
   end text_indexes_filter_by_tenant;

   procedure text_filter_columns_fit is
      l_expect  ut_expectation;
      l_columns number;
      l_wide    number;
      l_chars   number;
   begin
      select count(*),
             count(case when c.data_length > co_structured_bytes then 1 end),
             count(case when c.column_name = 'TENANT_ID' and c.char_used <> 'B' then 1 end)
        into l_columns, l_wide, l_chars
        from ctx_filter_by_columns f
        join user_tab_columns c
          on c.table_name = f.fbc_table_name
         and c.column_name = f.fbc_column_name
       where f.fbc_index_owner = user;
      l_expect := ut.expect(l_columns);
      l_expect.to_be_greater_than(0);
      l_expect := ut.expect(l_wide);
      l_expect.to_equal(0);
      l_expect := ut.expect(l_chars);
      l_expect.to_equal(0);
   end text_filter_columns_fit;
end test_schema;
/
