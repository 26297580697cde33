--liquibase formatted sql

-- utPLSQL v3 suite for CTX_MEMORY and CTX_SESSION: the write API, tenant isolation (VPD on the application
-- context) and point-in-time reads (capture_snapshot + rows_as_of). The conformance scenarios check the same
-- rules through Python; this suite checks them inside the database, as the owner CTXASM_OWNER.
-- Deployed only by liquibase/changelog-utplsql.yaml (never by the master changelog), after the main one.
--
-- Transactions: Flashback Query reads committed data only, so the snapshot tests commit. The suite is
-- therefore --%rollback(manual): the fixture tenants are registered and committed in setup_tenants and
-- removed, with everything written under them, by purge_tenants (CTX_ADMIN.purge_tenant, then commit);
-- undo_uncommitted rolls back what each test left uncommitted. Every test uses its own memory ids, so no
-- test depends on another one's rows.

--changeset ctxasm:ora-test-0010-01-test-ctx-memory-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package test_ctx_memory authid definer is
   --%suite(CTX_MEMORY: writes, tenant isolation and point-in-time reads)
   --%suitepath(ctxasm.oracle)
   --%rollback(manual)

   co_tenant_a constant varchar2(64) := 'ut-memory-a';
   co_tenant_b constant varchar2(64) := 'ut-memory-b';

   --%beforeall
   procedure setup_tenants;

   --%afterall
   procedure purge_tenants;

   --%aftereach
   procedure undo_uncommitted;

   --%test(put_memory writes version 1, active, in the session's tenant)
   procedure put_memory_writes_version_one;

   --%test(put_memory without a session tenant raises tenant_not_set)
   --%throws(ctx_errors.e_tenant_not_set)
   procedure put_memory_needs_a_tenant;

   --%test(put_memory of an unknown memory type raises invalid_memory_type)
   --%throws(ctx_errors.e_invalid_memory_type)
   procedure put_memory_rejects_unknown_type;

   --%test(put_memory with a key that is no column raises invalid_field naming type and field)
   procedure put_memory_names_the_bad_field;

   --%test(put_memory of an existing id raises duplicate_memory)
   --%throws(ctx_errors.e_duplicate_memory)
   procedure put_memory_rejects_duplicate_id;

   --%test(supersede retires the active version and writes version + 1)
   procedure supersede_keeps_the_history;

   --%test(supersede of a memory with no active version raises memory_not_found)
   --%throws(ctx_errors.e_memory_not_found)
   procedure supersede_needs_an_active_version;

   --%test(delete_memory soft-deletes: status deleted, deleted_at set, the row stays)
   procedure delete_memory_is_soft;

   --%test(erase scrubs the text of every version and returns the number of versions)
   procedure erase_scrubs_every_version;

   --%test(erase follows a manifest: every manifest version is marked and loses a question holding the text)
   procedure erase_marks_every_manifest_version;

   --%test(erase compares the whole text with the question: a question holding only a prefix stays)
   procedure erase_keeps_a_question_with_a_prefix;

   --%test(erase scrubs each derived id once and counts its versions once)
   procedure erase_counts_derived_ids_once;

   --%test(erase writes NULL into nullable columns and [erased] into required ones, as PostgreSQL)
   procedure erase_nulls_nullable_columns;

   --%test(erase follows every copy: a tool result and a model response citing it, source_hash NULL, a report)
   procedure erase_follows_every_copy;

   --%test(rows_as_of of an SCN before an erasure leaves the erased version out)
   procedure rows_as_of_leaves_out_erased_versions;

   --%test(set_tenant with a claim for an unregistered tenant raises invalid_claim and leaves no tenant set)
   procedure set_tenant_rejects_an_unregistered_tenant;

   --%test(VPD: another tenant, or no tenant, sees none of the rows)
   procedure other_tenant_sees_nothing;

   --%test(rows_as_of returns the versions visible at the captured SCN, not later ones)
   procedure rows_as_of_reads_the_past;

   --%test(rows_as_of shows only the session tenant's rows at the SCN)
   procedure rows_as_of_is_tenant_scoped;

   --%test(rows_as_of of a value that is not an SCN raises invalid_snapshot)
   --%throws(ctx_errors.e_invalid_snapshot)
   procedure rows_as_of_rejects_bad_snapshot;

   --%test(rows_as_of of an SCN Oracle cannot read raises invalid_snapshot)
   --%throws(ctx_errors.e_invalid_snapshot)
   procedure rows_as_of_rejects_future_scn;

   --%test(thread_activity lists a thread with turns no episode summary covers; thread_turns reads them in order, each with its speaker)
   procedure thread_activity_and_turns;

   --%test(read_compressions returns a stored compression as it is now, with its model and prompt version)
   procedure read_compressions_returns_the_row;

   --%test(read_compressions refuses a reference of another type with invalid_argument)
   --%throws(ctx_errors.e_invalid_argument)
   procedure read_compressions_takes_compressions_only;

   --%test(read_facts lists the active facts under a subject prefix newest first, of the claim's user, and a fact's versions)
   procedure read_facts_lists_and_versions;

   --%test(read_facts refuses a limit above max_fact_rows with invalid_argument)
   --%throws(ctx_errors.e_invalid_argument)
   procedure read_facts_is_bounded;
end test_ctx_memory;
/

--changeset ctxasm:ora-test-0010-02-test-ctx-memory-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body test_ctx_memory is
   co_entity constant varchar2(16) := 'entity';
   co_hash   constant varchar2(64) := '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef';
   co_erased constant varchar2(8) := '[erased]';

   -- A fact record for entity_memory as the JSON CTX_MEMORY takes.
   function fact_json(in_id in varchar2, in_content in varchar2) return clob is
      l_record json_object_t := json_object_t();
   begin
      l_record.put('id', in_id);
      l_record.put('subject', 'model:helios-rag');
      l_record.put('predicate', 'beir_ndcg10');
      l_record.put('confidence', 0.9);
      l_record.put('valid_from', '2026-05-01T00:00:00Z');
      l_record.put('content', in_content);
      return l_record.to_clob();
   end fact_json;

   -- How many versions of one entity the session can see (VPD applies to the owner too).
   function visible_versions(in_id in varchar2) return number is
      l_count number;
   begin
      select count(*) into l_count from entity_memory e where e.id = in_id;
      return l_count;
   end visible_versions;

   -- The versions of one id in a rows_as_of cursor, as 'v1,v2,...' (status after a colon).
   function versions_in(in_rows in sys_refcursor, in_id in varchar2) return varchar2 is
      l_row      clob;
      l_id       varchar2(128);
      l_version  varchar2(16);
      l_status   varchar2(16);
      l_versions varchar2(4000);
   begin
      loop
         fetch in_rows into l_row;
         exit when in_rows%notfound;
         select json_value(l_row, '$.id'), json_value(l_row, '$.version'), json_value(l_row, '$.status')
           into l_id, l_version, l_status
           from dual;
         if l_id = in_id then
            l_versions := l_versions || case when l_versions is not null then ',' end || l_version || ':' || l_status;
         end if;
      end loop;
      close in_rows;
      return l_versions;
   end versions_in;

   -- versions_in of the entity rows the session's tenant had at the snapshot.
   function versions_at(in_snapshot in varchar2, in_id in varchar2) return varchar2 is
      l_rows sys_refcursor;
   begin
      l_rows := ctx_memory.rows_as_of(in_memory_type => co_entity, in_snapshot => in_snapshot);
      return versions_in(in_rows => l_rows, in_id => in_id);
   end versions_at;

   -- A row as the JSON CTX_MEMORY takes, from up to five key/value pairs (NULL keys are left out).
   function record_json(
      in_key_1 in varchar2, in_value_1 in varchar2,
      in_key_2 in varchar2 default null, in_value_2 in varchar2 default null,
      in_key_3 in varchar2 default null, in_value_3 in varchar2 default null,
      in_key_4 in varchar2 default null, in_value_4 in varchar2 default null,
      in_key_5 in varchar2 default null, in_value_5 in varchar2 default null
   ) return json_object_t is
      l_record json_object_t := json_object_t();
   begin
      l_record.put(key => in_key_1, val => in_value_1);
      if in_key_2 is not null then
         l_record.put(key => in_key_2, val => in_value_2);
      end if;
      if in_key_3 is not null then
         l_record.put(key => in_key_3, val => in_value_3);
      end if;
      if in_key_4 is not null then
         l_record.put(key => in_key_4, val => in_value_4);
      end if;
      if in_key_5 is not null then
         l_record.put(key => in_key_5, val => in_value_5);
      end if;
      return l_record;
   end record_json;

   -- A context_manifest event whose question is in_question, and the source ref saying it rendered in_source_id.
   procedure put_manifest(in_manifest_id in varchar2, in_question in varchar2, in_source_id in varchar2) is
      l_event   json_object_t;
      l_payload json_object_t := json_object_t();
      l_ref     json_object_t;
      l_id      varchar2(128);
   begin
      l_payload.put(key => 'question', val => in_question);
      l_payload.put(key => 'request_hash', val => co_hash);
      l_event := record_json('id', in_manifest_id, 'role', 'event', 'event_type', 'context_manifest',
                             'content', 'context manifest for the erase tests');
      l_event.put(key => 'content_json', val => l_payload);
      l_id := ctx_memory.put_memory(in_memory_type => 'conversation', in_record => l_event.to_clob());
      l_ref := record_json('id', in_manifest_id || ':1', 'derived_type', 'manifest', 'derived_id', in_manifest_id,
                           'source_type', co_entity, 'source_id', in_source_id);
      l_ref.put(key => 'derived_version', val => 1);
      l_ref.put(key => 'source_version', val => 1);
      l_ref.put(key => 'relation', val => 'rendered');
      l_ref.put(key => 'content', val => 'manifest ' || in_manifest_id || ' rendered ' || in_source_id);
      l_id := ctx_memory.put_memory(in_memory_type => 'source_ref', in_record => l_ref.to_clob());
   end put_manifest;

   -- How many versions of a manifest carry [entity, in_source_id] in erased_dependencies and a question of
   -- in_question_length characters (8 for '[erased]').
   function marked_versions(in_manifest_id in varchar2, in_source_id in varchar2, in_question_length in number)
      return number is
      l_count number;
   begin
      select count(*)
        into l_count
        from conversation_memory m
       where m.id = in_manifest_id
         and json_value(m.content_json, '$.erased_dependencies[0][0]') = co_entity
         and json_value(m.content_json, '$.erased_dependencies[0][1]') = in_source_id
         and dbms_lob.getlength(json_value(m.content_json, '$.question' returning clob)) = in_question_length;
      return l_count;
   end marked_versions;

   procedure setup_tenants is
   begin
      -- first remove what an interrupted earlier run left behind
      purge_tenants;
      ctx_admin.register_tenant(in_tenant_id => co_tenant_a, in_display_name => 'utPLSQL tenant A');
      ctx_admin.register_tenant(in_tenant_id => co_tenant_b, in_display_name => 'utPLSQL tenant B');
      commit;
   end setup_tenants;

   procedure purge_tenants is
      l_removed number;
   begin
      rollback;
      l_removed := ctx_admin.purge_tenant(in_tenant_id => co_tenant_a);
      l_removed := ctx_admin.purge_tenant(in_tenant_id => co_tenant_b);
      ctx_session.clear_tenant;
      commit;
   end purge_tenants;

   -- What a test wrote and did not commit (a --%throws test stops half way) goes, and so does its tenant.
   procedure undo_uncommitted is
   begin
      rollback;
      ctx_session.clear_tenant;
   end undo_uncommitted;

   procedure put_memory_writes_version_one is
      l_expect  ut_expectation;
      l_id      varchar2(128);
      l_version number;
      l_status  varchar2(16);
      l_tenant  varchar2(64);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_put_1', 'First fact.'));
      l_expect := ut.expect(l_id);
      l_expect.to_equal('ut_put_1');
      select e.version, e.status, e.tenant_id
        into l_version, l_status, l_tenant
        from entity_memory e
       where e.id = l_id;
      l_expect := ut.expect(l_version);
      l_expect.to_equal(1);
      l_expect := ut.expect(l_status);
      l_expect.to_equal('active');
      l_expect := ut.expect(l_tenant);
      l_expect.to_equal(co_tenant_a);
   end put_memory_writes_version_one;

   procedure put_memory_needs_a_tenant is
      l_id varchar2(128);
   begin
      ctx_session.clear_tenant;
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_put_2', 'No tenant.'));
   end put_memory_needs_a_tenant;

   procedure put_memory_rejects_unknown_type is
      l_id varchar2(128);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => 'rumour', in_record => fact_json('ut_put_3', 'Unknown type.'));
   end put_memory_rejects_unknown_type;

   procedure put_memory_names_the_bad_field is
      l_expect  ut_expectation;
      l_id      varchar2(128);
      l_message varchar2(4000);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      begin
         l_id := ctx_memory.put_memory(
                    in_memory_type => co_entity,
                    in_record      => '{"id": "ut_put_4", "subject": "s", "predicate": "p", '
                                      || '"content": "Bad field.", "no_such_column": 1}'
                 );
         ut.fail('put_memory accepted a key that is not a column');
      exception
         when others then
            -- only the contract's error counts; anything else fails the test with its own error
            if sqlcode <> ctx_errors.co_invalid_field then
               raise;
            end if;
            l_message := sqlerrm;
      end;
      l_expect := ut.expect(l_message);
      l_expect.to_be_like('%invalid_field: entity.no_such_column: unknown field%');
   end put_memory_names_the_bad_field;

   procedure put_memory_rejects_duplicate_id is
      l_id varchar2(128);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_put_5', 'Once.'));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_put_5', 'Twice.'));
   end put_memory_rejects_duplicate_id;

   procedure supersede_keeps_the_history is
      l_expect      ut_expectation;
      l_id          varchar2(128);
      l_new_version number;
      l_old_status  varchar2(16);
      l_new_status  varchar2(16);
      l_old_until   timestamp with time zone;
      l_new_from    timestamp with time zone;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_sup_1', 'Scores 0.92.'));
      l_new_version := ctx_memory.supersede(
                          in_memory_type => co_entity,
                          in_id          => l_id,
                          in_record      => '{"content": "Scores 0.78 (corrected).", '
                                            || '"valid_from": "2026-08-17T00:00:00Z"}'
                       );
      l_expect := ut.expect(l_new_version);
      l_expect.to_equal(2);
      select e.status, e.valid_until into l_old_status, l_old_until from entity_memory e
       where e.id = l_id and e.version = 1;
      select e.status, e.valid_from into l_new_status, l_new_from from entity_memory e
       where e.id = l_id and e.version = 2;
      l_expect := ut.expect(l_old_status);
      l_expect.to_equal('superseded');
      l_expect := ut.expect(l_new_status);
      l_expect.to_equal('active');
      l_expect := ut.expect(l_old_until);
      l_expect.to_equal(l_new_from);
      l_expect := ut.expect(visible_versions(l_id));
      l_expect.to_equal(2);
   end supersede_keeps_the_history;

   procedure supersede_needs_an_active_version is
      l_version number;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_version := ctx_memory.supersede(in_memory_type => co_entity, in_id => 'ut_never_written',
                                        in_record => '{"content": "Nothing to replace."}');
   end supersede_needs_an_active_version;

   procedure delete_memory_is_soft is
      l_expect  ut_expectation;
      l_id      varchar2(128);
      l_status  varchar2(16);
      l_deleted timestamp with time zone;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_del_1', 'To delete.'));
      ctx_memory.delete_memory(in_memory_type => co_entity, in_id => l_id);
      select e.status, e.deleted_at into l_status, l_deleted from entity_memory e where e.id = l_id;
      l_expect := ut.expect(l_status);
      l_expect.to_equal('deleted');
      l_expect := ut.expect(l_deleted);
      l_expect.to_be_not_null();
   end delete_memory_is_soft;

   procedure erase_scrubs_every_version is
      l_expect  ut_expectation;
      l_id      varchar2(128);
      l_version number;
      l_erased  number;
      l_kept    number;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_erase_1', 'Secret v1.'));
      l_version := ctx_memory.supersede(in_memory_type => co_entity, in_id => l_id,
                                        in_record => '{"content": "Secret v2."}');
      l_erased := ctx_memory.erase(in_memory_type => co_entity, in_id => l_id);
      l_expect := ut.expect(l_erased);
      l_expect.to_equal(2);
      select count(*) into l_kept from entity_memory e
       where e.id = l_id and (e.status <> 'erased' or dbms_lob.instr(e.content, 'Secret') > 0);
      l_expect := ut.expect(l_kept);
      l_expect.to_equal(0);
   end erase_scrubs_every_version;

   procedure erase_marks_every_manifest_version is
      l_expect   ut_expectation;
      l_id       varchar2(128);
      l_version  number;
      l_erased   number;
      -- 4,500 two-byte characters: more than a VARCHAR2(4000) of bytes, and more than a 4,000-character prefix
      l_secret   varchar2(32767) := rpad('é', 4500, 'é') || ' secret tail';
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_erase_q', l_secret));
      put_manifest(in_manifest_id => 'ut_manifest_q', in_question => 'Is it true that ' || l_secret || '?',
                   in_source_id => 'ut_erase_q');
      -- a second version of the manifest row (content_json inherited): both versions must be marked
      l_version := ctx_memory.supersede(in_memory_type => 'conversation', in_id => 'ut_manifest_q',
                                        in_record => '{"content": "context manifest, second version"}');
      l_erased := ctx_memory.erase(in_memory_type => co_entity, in_id => 'ut_erase_q');
      l_expect := ut.expect(l_erased);
      l_expect.to_equal(1);
      l_expect := ut.expect(marked_versions('ut_manifest_q', 'ut_erase_q', length(co_erased)));
      l_expect.to_equal(2);
   end erase_marks_every_manifest_version;

   procedure erase_keeps_a_question_with_a_prefix is
      l_expect ut_expectation;
      l_id     varchar2(128);
      l_erased number;
      l_text   varchar2(32767) := rpad('x', 5000, 'x') || ' end of the text';
      l_prefix varchar2(4000) := substr(rpad('x', 5000, 'x'), 1, 4000);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_erase_p', l_text));
      put_manifest(in_manifest_id => 'ut_manifest_p', in_question => l_prefix, in_source_id => 'ut_erase_p');
      l_erased := ctx_memory.erase(in_memory_type => co_entity, in_id => 'ut_erase_p');
      -- marked, but the question holds only the first 4,000 characters of the text: it stays
      l_expect := ut.expect(marked_versions('ut_manifest_p', 'ut_erase_p', 4000));
      l_expect.to_equal(1);
   end erase_keeps_a_question_with_a_prefix;

   procedure erase_counts_derived_ids_once is
      l_expect    ut_expectation;
      l_id        varchar2(128);
      l_version   number;
      l_erased    number;
      l_record    json_object_t;
      l_payload   json_object_t := json_object_t();
      l_remaining number;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_erase_d', 'Derived from.'));
      put_manifest(in_manifest_id => 'ut_manifest_d', in_question => 'What is derived?', in_source_id => 'ut_erase_d');
      -- a compression of the memory with two versions
      l_record := record_json('id', 'ut_erase_cmp', 'source_type', co_entity, 'source_id', 'ut_erase_d',
                              'source_hash', co_hash, 'generating_model', 'ut-model');
      l_record.put(key => 'source_version', val => 1);
      l_record.put(key => 'prompt_version', val => 'ut-prompt');
      l_record.put(key => 'content', val => 'Derived (summary).');
      l_id := ctx_memory.put_memory(in_memory_type => 'compression', in_record => l_record.to_clob());
      l_version := ctx_memory.supersede(in_memory_type => 'compression', in_id => 'ut_erase_cmp',
                                        in_record => '{"content": "Derived (summary, second version)."}');
      -- a recorded provider request of the window, with two versions
      l_payload.put(key => 'manifest_id', val => 'ut_manifest_d');
      l_record := record_json('id', 'ut_erase_req', 'role', 'event', 'event_type', 'provider_request',
                              'content', 'The request that carried: Derived from.');
      l_record.put(key => 'content_json', val => l_payload);
      l_id := ctx_memory.put_memory(in_memory_type => 'conversation', in_record => l_record.to_clob());
      l_version := ctx_memory.supersede(in_memory_type => 'conversation', in_id => 'ut_erase_req',
                                        in_record => '{"content": "The request again: Derived from."}');
      l_erased := ctx_memory.erase(in_memory_type => co_entity, in_id => 'ut_erase_d');
      -- 1 version of the memory, 2 of the compression, 2 of the request; each id scrubbed once
      l_expect := ut.expect(l_erased);
      l_expect.to_equal(5);
      select count(*) into l_remaining from context_compression c
       where c.id = 'ut_erase_cmp' and (c.status <> 'erased' or dbms_lob.instr(c.content, 'Derived') > 0);
      l_expect := ut.expect(l_remaining);
      l_expect.to_equal(0);
      select count(*) into l_remaining from conversation_memory m
       where m.id = 'ut_erase_req' and (m.status <> 'erased' or m.content_json is not null);
      l_expect := ut.expect(l_remaining);
      l_expect.to_equal(0);
   end erase_counts_derived_ids_once;

   procedure erase_nulls_nullable_columns is
      l_expect     ut_expectation;
      l_id         varchar2(128);
      l_erased     number;
      l_record     json_object_t;
      l_payload    json_object_t := json_object_t();
      l_title      varchar2(512);
      l_content    varchar2(100);
      l_json_null  number;
      l_refs       varchar2(100);
      l_doc_title  varchar2(512);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_payload.put(key => 'section', val => 'intro');
      l_record := record_json('id', 'ut_erase_doc', 'title', 'A document title', 'content', 'Document text.');
      l_id := ctx_memory.put_memory(in_memory_type => 'kb_document', in_record => l_record.to_clob());
      l_record := record_json('id', 'ut_erase_chunk', 'document_id', 'ut_erase_doc', 'title', 'A chunk title',
                              'content', 'Chunk text.');
      l_record.put(key => 'chunk_index', val => 0);
      l_record.put(key => 'content_json', val => l_payload);
      l_id := ctx_memory.put_memory(in_memory_type => 'kb_chunk', in_record => l_record.to_clob());
      l_erased := ctx_memory.erase(in_memory_type => 'kb_chunk', in_id => 'ut_erase_chunk');
      l_erased := ctx_memory.erase(in_memory_type => 'kb_document', in_id => 'ut_erase_doc');
      select c.title, to_char(c.content), nvl2(c.content_json, 0, 1), json_serialize(c.source_refs)
        into l_title, l_content, l_json_null, l_refs
        from knowledge_base_chunk c
       where c.id = 'ut_erase_chunk';
      select d.title into l_doc_title from knowledge_base_document d where d.id = 'ut_erase_doc';
      -- knowledge_base_chunk.title is nullable: NULL; knowledge_base_document.title is required: [erased]
      l_expect := ut.expect(l_title);
      l_expect.to_be_null();
      l_expect := ut.expect(l_doc_title);
      l_expect.to_equal(co_erased);
      l_expect := ut.expect(l_content);
      l_expect.to_equal(co_erased);
      l_expect := ut.expect(l_json_null);
      l_expect.to_equal(1);
      l_expect := ut.expect(l_refs);
      l_expect.to_equal('[]');
   end erase_nulls_nullable_columns;

   procedure erase_follows_every_copy is
      l_expect  ut_expectation;
      l_id      varchar2(128);
      l_record  json_object_t;
      l_refs    json_array_t := json_array_t();
      l_ref     json_object_t := json_object_t();
      l_report  json_object_t;
      l_left    number;
      l_hashes  number;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity,
                                    in_record => fact_json('ut_erase_copy', 'Quokka vellum briefing.'));
      put_manifest(in_manifest_id => 'ut_manifest_copy', in_question => 'What briefing?',
                   in_source_id => 'ut_erase_copy');
      -- a compression of it, a tool result citing it, and a model response of the window that rendered it
      l_record := record_json('id', 'ut_copy_cmp', 'source_type', co_entity, 'source_id', 'ut_erase_copy',
                              'source_hash', co_hash, 'generating_model', 'ut-model');
      l_record.put(key => 'source_version', val => 1);
      l_record.put(key => 'prompt_version', val => 'ut-prompt');
      l_record.put(key => 'content', val => 'Quokka, in short.');
      l_id := ctx_memory.put_memory(in_memory_type => 'compression', in_record => l_record.to_clob());
      l_ref.put(key => 'type', val => co_entity);
      l_ref.put(key => 'id', val => 'ut_erase_copy');
      l_ref.put(key => 'version', val => 1);
      l_refs.append(val => l_ref);
      l_record := record_json('id', 'ut_copy_tool', 'role', 'event', 'event_type', 'tool_result',
                              'content', '<tool_result>Quokka vellum briefing.</tool_result>');
      l_record.put(key => 'source_refs', val => l_refs);
      l_id := ctx_memory.put_memory(in_memory_type => 'conversation', in_record => l_record.to_clob());
      l_refs := json_array_t();
      l_ref := json_object_t();
      l_ref.put(key => 'type', val => 'manifest');
      l_ref.put(key => 'id', val => 'ut_manifest_copy');
      l_ref.put(key => 'version', val => 1);
      l_refs.append(val => l_ref);
      l_record := record_json('id', 'ut_copy_response', 'role', 'event', 'event_type', 'model_response',
                              'content', 'It was the Quokka vellum briefing.');
      l_record.put(key => 'source_refs', val => l_refs);
      l_id := ctx_memory.put_memory(in_memory_type => 'conversation', in_record => l_record.to_clob());

      l_report := json_object_t.parse(jsn => ctx_memory.erase_report(in_memory_type => co_entity,
                                                                       in_id => 'ut_erase_copy'));
      l_expect := ut.expect(l_report.get_number(key => 'total'));
      l_expect.to_equal(4);
      select count(*) into l_left
        from conversation_memory m
       where m.id in ('ut_copy_tool', 'ut_copy_response')
         and (m.status <> co_erased or dbms_lob.instr(m.content, 'Quokka') > 0);
      l_expect := ut.expect(l_left);
      l_expect.to_equal(0);
      select count(*) into l_hashes from context_compression c where c.id = 'ut_copy_cmp' and c.source_hash is not null;
      l_expect := ut.expect(l_hashes);
      l_expect.to_equal(0);
   end erase_follows_every_copy;

   procedure rows_as_of_leaves_out_erased_versions is
      l_expect   ut_expectation;
      l_id       varchar2(128);
      l_erased   number;
      l_snapshot varchar2(64);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_asof_erased', 'Secret.'));
      commit;
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_snapshot := ctx_memory.capture_snapshot();
      l_erased := ctx_memory.erase(in_memory_type => co_entity, in_id => l_id);
      commit;
      -- undo still holds version 1 as of the snapshot; the contract does not return it
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_expect := ut.expect(versions_at(l_snapshot, l_id));
      l_expect.to_be_null();
   end rows_as_of_leaves_out_erased_versions;

   procedure set_tenant_rejects_an_unregistered_tenant is
      l_expect ut_expectation;
      l_raised boolean := false;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      begin
         ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => 'ut-memory-nobody'));
      exception
         when others then
            if sqlcode <> ctx_errors.co_invalid_claim then
               raise;
            end if;
            l_raised := true;
      end;
      l_expect := ut.expect(l_raised);
      l_expect.to_be_true();
      -- the context is cleared first, so a failed call never leaves tenant A in place
      l_expect := ut.expect(ctx_session.current_tenant());
      l_expect.to_be_null();
   end set_tenant_rejects_an_unregistered_tenant;

   procedure other_tenant_sees_nothing is
      l_expect ut_expectation;
      l_id     varchar2(128);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_vpd_1', 'Tenant A only.'));
      l_expect := ut.expect(visible_versions(l_id));
      l_expect.to_equal(1);
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_b));
      l_expect := ut.expect(visible_versions(l_id));
      l_expect.to_equal(0);
      ctx_session.clear_tenant;
      l_expect := ut.expect(visible_versions(l_id));
      l_expect.to_equal(0);
   end other_tenant_sees_nothing;

   procedure rows_as_of_reads_the_past is
      l_expect   ut_expectation;
      l_id       varchar2(128);
      l_version  number;
      l_snapshot varchar2(64);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_asof_1', 'Scores 0.92.'));
      commit;
      -- the tenant ends with the transaction: set it again for the next one
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_snapshot := ctx_memory.capture_snapshot();
      l_expect := ut.expect(l_snapshot);
      l_expect.to_match('^[0-9]+$');
      l_version := ctx_memory.supersede(in_memory_type => co_entity, in_id => l_id,
                                        in_record => '{"content": "Scores 0.78."}');
      commit;
      -- the tenant ends with the transaction: set it again for the next one
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_expect := ut.expect(versions_at(l_snapshot, l_id));
      l_expect.to_equal('1:active');
      l_expect := ut.expect(versions_at(ctx_memory.capture_snapshot(), l_id));
      l_expect.to_equal('1:superseded,2:active');
   end rows_as_of_reads_the_past;

   procedure rows_as_of_is_tenant_scoped is
      l_expect   ut_expectation;
      l_id       varchar2(128);
      l_snapshot varchar2(64);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_asof_2', 'Tenant A.'));
      commit;
      -- the tenant ends with the transaction: set it again for the next one
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_snapshot := ctx_memory.capture_snapshot();
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_b));
      l_expect := ut.expect(versions_at(l_snapshot, l_id));
      l_expect.to_be_null();
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_expect := ut.expect(versions_at(l_snapshot, l_id));
      l_expect.to_equal('1:active');
   end rows_as_of_is_tenant_scoped;

   procedure rows_as_of_rejects_bad_snapshot is
      l_rows sys_refcursor;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_rows := ctx_memory.rows_as_of(in_memory_type => co_entity, in_snapshot => 'not-an-scn');
   end rows_as_of_rejects_bad_snapshot;

   procedure rows_as_of_rejects_future_scn is
      l_rows sys_refcursor;
      l_row  clob;
      l_scn  number;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      -- an SCN Oracle can hold, a trillion changes ahead of the current one (ORA-08181), mapped like ORA-08180
      -- and ORA-01466; whether Oracle refuses it when the cursor opens or at its first fetch, the fetch below
      -- reaches it, so the test cannot pass without the refusal
      l_scn := to_number(ctx_memory.capture_snapshot()) + 1000000000000;
      l_rows := ctx_memory.rows_as_of(in_memory_type => co_entity, in_snapshot => to_char(l_scn));
      fetch l_rows into l_row;
      close l_rows;
   end rows_as_of_rejects_future_scn;

   procedure thread_activity_and_turns is
      l_expect ut_expectation;
      l_index  number;
      l_role   varchar2(16);
      l_turn   json_object_t;
      l_found  clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      for i in 1 .. 3 loop
         l_role := 'assistant';
         if mod(i, 2) = 1 then
            l_role := 'user';
         end if;
         l_turn := record_json('id', 'ut_turn_' || to_char(i), 'role', l_role, 'thread_id', 'ut_thread_episode',
                               'user_id', 'ut_user', 'content', 'Turn ' || to_char(i) || ' of the episode thread.');
         if i = 2 then
            l_turn.put(key => 'speaker', val => 'Tom');
         end if;
         l_index := ctx_memory.add_turn(in_record => l_turn.to_clob());
      end loop;
      l_found := ctx_memory.thread_activity(in_user_id => null, in_agent_id => null, in_limit => 10);
      l_expect := ut.expect(json_value(l_found, '$[0].thread_id'));
      l_expect.to_equal('ut_thread_episode');
      l_expect := ut.expect(json_value(l_found, '$[0].new_turns'));
      l_expect.to_equal('3');
      l_expect := ut.expect(json_value(l_found, '$[0].summary'));
      l_expect.to_be_null();
      l_found := ctx_memory.thread_turns(in_thread_id => 'ut_thread_episode', in_after_turn => 1, in_limit => 10);
      l_expect := ut.expect(json_value(l_found, '$.size()'));
      l_expect.to_equal('2');
      l_expect := ut.expect(json_value(l_found, '$[0].turn_index'));
      l_expect.to_equal('2');
      l_expect := ut.expect(json_value(l_found, '$[0].role'));
      l_expect.to_equal('assistant');
      l_expect := ut.expect(json_value(l_found, '$[0].speaker'));
      l_expect.to_equal('Tom');
      l_expect := ut.expect(json_value(l_found, '$[1].speaker'));
      l_expect.to_be_null();
      l_expect := ut.expect(json_value(l_found, '$[1].ref[1]'));
      l_expect.to_equal('ut_turn_3');
   end thread_activity_and_turns;

   procedure read_compressions_returns_the_row is
      l_expect ut_expectation;
      l_id     varchar2(128);
      l_record json_object_t;
      l_found  clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => fact_json('ut_cmp_src', 'A long fact.'));
      l_record := record_json('id', 'ut_cmp_1', 'source_type', co_entity, 'source_id', 'ut_cmp_src',
                              'source_hash', co_hash, 'generating_model', 'canned-summarizer-1');
      l_record.put(key => 'source_version', val => 1);
      l_record.put(key => 'prompt_version', val => 'compress-000000000000');
      l_record.put(key => 'content', val => 'A short fact.');
      l_id := ctx_memory.put_memory(in_memory_type => 'compression', in_record => l_record.to_clob());
      l_found := ctx_memory.read_compressions(in_refs => '[["compression", "ut_cmp_1", 1], ["compression", "ut_none", 1]]');
      l_expect := ut.expect(json_value(l_found, '$."compression:ut_cmp_1:1".content'));
      l_expect.to_equal('A short fact.');
      l_expect := ut.expect(json_value(l_found, '$."compression:ut_cmp_1:1".generating_model'));
      l_expect.to_equal('canned-summarizer-1');
      l_expect := ut.expect(json_value(l_found, '$."compression:ut_cmp_1:1".source[1]'));
      l_expect.to_equal('ut_cmp_src');
      l_expect := ut.expect(json_value(l_found, '$."compression:ut_none:1".status'));
      l_expect.to_be_null();
   end read_compressions_returns_the_row;

   procedure read_compressions_takes_compressions_only is
      l_found clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_found := ctx_memory.read_compressions(in_refs => '[["entity", "ut_cmp_src", 1]]');
   end read_compressions_takes_compressions_only;

   procedure read_facts_lists_and_versions is
      l_expect  ut_expectation;
      l_record  json_object_t;
      l_id      varchar2(128);
      l_version number;
      l_found   clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      for i in 1 .. 3 loop
         l_record := record_json('id', 'ut_rf_' || to_char(i), 'subject', 'ut-adapter:jane', 'predicate',
                                 'memory_' || to_char(i), 'user_id', 'ut_jane', 'content',
                                 'Jane''s memory ' || to_char(i));
         l_record.put('valid_from', '2026-05-0' || to_char(i) || 'T00:00:00Z');
         l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => l_record.to_clob());
      end loop;
      l_record := record_json('id', 'ut_rf_joe', 'subject', 'ut-adapter:joe', 'predicate', 'memory_1',
                              'user_id', 'ut_joe', 'content', 'Joe''s memory');
      l_id := ctx_memory.put_memory(in_memory_type => co_entity, in_record => l_record.to_clob());
      l_version := ctx_memory.supersede(in_memory_type => co_entity, in_id => 'ut_rf_1',
                                        in_record => '{"content": "Jane''s memory 1, corrected"}');
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a, in_user_id => 'ut_jane'));
      l_found := ctx_memory.read_facts(in_subject_prefix => 'ut-adapter:', in_predicate => null, in_id => null,
                                       in_limit => 2);
      l_expect := ut.expect(json_value(l_found, '$.size()'));
      l_expect.to_equal('2');
      l_expect := ut.expect(json_value(l_found, '$[0].content'));
      l_expect.to_equal('Jane''s memory 1, corrected');
      l_expect := ut.expect(json_value(l_found, '$[1].ref[1]'));
      l_expect.to_equal('ut_rf_3');
      l_found := ctx_memory.read_facts(in_subject_prefix => 'ut-adapter:', in_predicate => null, in_id => 'ut_rf_1',
                                       in_limit => 10);
      l_expect := ut.expect(json_value(l_found, '$.size()'));
      l_expect.to_equal('2');
      l_expect := ut.expect(json_value(l_found, '$[0].status'));
      l_expect.to_equal('superseded');
      l_expect := ut.expect(json_value(l_found, '$[1].first_valid_from'));
      l_expect.to_equal('2026-05-01T00:00:00+00:00');
      l_found := ctx_memory.read_facts(in_subject_prefix => 'ut-adapter:', in_predicate => null,
                                       in_id => 'ut_rf_joe', in_limit => 10);
      l_expect := ut.expect(json_value(l_found, '$.size()'));
      l_expect.to_equal('0');
   end read_facts_lists_and_versions;

   procedure read_facts_is_bounded is
      l_found clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant_a));
      l_found := ctx_memory.read_facts(in_subject_prefix => 'ut-adapter:', in_predicate => null, in_id => null,
                                       in_limit => 1001);
   end read_facts_is_bounded;
end test_ctx_memory;
/
