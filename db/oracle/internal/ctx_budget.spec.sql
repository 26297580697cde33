--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-budget-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_budget authid definer is
   /**
    * The budget of one window (docs/assembly.md, steps budget and candidate limits): which context_budget
    * guideline is in effect, the budget fields the database itself uses, checked, and how many candidates each
    * dynamic slice keeps. The twin of PostgreSQL's db/postgresql/internal/ctx_budget.sql (schema ctxasm).
    * Engine-internal, for CTX_ASSEMBLY.select_window; never granted to CTXASM_APP. Definer's rights: it reads
    * guideline_memory as the owner, led by the tenant the caller passes (the session's, which the caller
    * checked); it writes nothing. Errors through CTX_ERRORS (invalid_budget, budget_missing, unknown_intent).
    */

   -- the guideline_key of a budget guideline; select_window leaves such rows out of the guidelines slice
   co_budget_key constant varchar2(32) := 'context_budget';

   /**
    * A budget in effect, with the fields the database uses, checked. name is 'guideline <id> version <n>',
    * for messages; content is content_json parsed; require_facts is 1 when history's current facts are required.
    */
   type t_budget is record (
      id            guideline_memory.id%type,
      version       guideline_memory.version%type,
      content_json  clob,
      name          varchar2(400),
      content       json_object_t,
      w_rerank      number,
      w_confidence  number,
      w_recency     number,
      recency_days  number,
      require_facts pls_integer
   );

   /**
    * The narrowest context_budget guideline in effect for the scope at in_evaluation_time (narrowest by
    * containment: thread, user, agent, tenant), read live or, with in_snapshot_scn, AS OF in_read_scn (a budget
    * erased since is not returned). Two of the winning scope in effect at once are refused, naming both; none is
    * budget_missing. Checks weights.{rerank,confidence,recency} (numbers >= 0), recency_days (> 0),
    * require_current_facts (a boolean, default true) and that in_intent is one of the shares (a NULL intent is
    * not refused, as PostgreSQL's `shares ? NULL` is NULL).
    */
   function budget_in_effect(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_intent          in varchar2,
      in_evaluation_time in timestamp with time zone,
      in_snapshot_scn    in number,
      in_read_scn        in number
   ) return t_budget;

   /**
    * weights.<in_field> of the budget, which must be a number >= 0 (invalid_budget naming in_budget_name).
    */
   function budget_weight(
      in_budget_name in varchar2,
      in_weights     in json_object_t,
      in_field       in varchar2
   ) return number;

   /**
    * How many candidates each dynamic slice keeps after scoring: the budget's candidate_limits (checked: a whole
    * number 1..1000 for a dynamic slice), else enough for the slice's share of what the reserves leave,
    * clamp(ceil(1.25 (usable - reserves) share / 25), 10, 1000).
    * @return {"durable_facts": n, "evidence": n, "recalled_history": n, "volatile_tail": n}
    */
   function candidate_limits(in_budget_name in varchar2, in_budget in json_object_t, in_intent in varchar2)
      return json_object_t;
end ctx_budget;
/
