--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-manifest-store-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_manifest_store authid definer is
   /**
    * How a manifest is stored and read: the work of CTX_ASSEMBLY.record_manifest, read_manifest and
    * latest_manifest_id, which are thin wrappers of the routines below (the same names, parameters, results and
    * errors). The twin of PostgreSQL's db/postgresql/api/ctx_manifest_store.sql (the functions of schema
    * ctx_assembly of the same names, and ctxasm.manifest_refs). Kept out of CTX_ASSEMBLY's body, whose text is
    * part of the selection version's digest (contract/selection.toml): the digest versions the selection, so a
    * change to how manifests are stored does not retire every recorded manifest.
    * Engine-internal: never granted to CTXASM_APP, which calls CTX_ASSEMBLY. Definer's rights: it reads and
    * writes CONVERSATION_MEMORY and CONTEXT_SOURCE_REF as the owner, the VPD policy <TABLE>_TENANT keeping every
    * row inside the session's tenant, and every read also names the tenant. Nothing here commits.
    * Errors through CTX_ERRORS.
    */

   /**
    * Records a composed window: the context_manifest event in CONVERSATION_MEMORY (role event, the manifest
    * as content_json, its stored text columns as CTX_MEMORY computes them) and, in one INSERT, one
    * CONTEXT_SOURCE_REF row per dependency (rendered memories, their compressions, annotation sources, excluded
    * rows, the budget), every reference checked before anything is written to CONTEXT_SOURCE_REF. In the
    * caller's transaction. Inserts 1 + n rows (VPD: the session's tenant); does not commit.
    * Bounded as the write path bounds other JSON: the manifest at most max_json_chars (2,000,000) characters,
    * what CTX_MEMORY.put_memory stores in one JSON field, and at most 20,000 dependency references.
    * @param in_manifest the manifest (docs/assembly.md) as a JSON object in a CLOB
    * @return the manifest id, 'manifest_' and 32 hex digits; the source refs are '<manifest id>:<n>'
    * @throws -20102 tenant_not_set, -20119 scope_not_allowed (the manifest's scope names a user or agent the
    *         claim does not), -20114 invalid_manifest (not an object; longer than 2,000,000 characters; memories,
    *         excluded or required_refs not arrays; request_hash not 64 lower-case hex digits; more than 20,000
    *         dependency references; a reference that is not [type, id, version], named by its relation and
    *         quoted to 200 characters), -20104 invalid_field (a scope value, or a reference's type or id, longer
    *         than its column)
    */
   function record_manifest(in_manifest in clob) return varchar2;

   /**
    * A recorded manifest of the session's tenant: the content_json of its active context_manifest event, or
    * NULL when there is none (another tenant's manifest is as unknown as one that never existed).
    * Reads CONVERSATION_MEMORY (VPD: the session's tenant); writes nothing.
    * @param in_manifest_id the id record_manifest returned
    * @return the manifest as a JSON object in a CLOB, or NULL
    * @throws -20102 tenant_not_set
    */
   function read_manifest(in_manifest_id in conversation_memory.id%type) return clob;

   /**
    * The scope's most recent window: the id of its latest active context_manifest event (created_at desc,
    * id desc) whose user, agent and thread are exactly these (NULL matches NULL), or NULL.
    * Reads CONVERSATION_MEMORY; writes nothing.
    * @throws -20102 tenant_not_set, -20119 scope_not_allowed when the claim names another user or agent
    */
   function latest_manifest_id(
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type
   ) return varchar2;
end ctx_manifest_store;
/
