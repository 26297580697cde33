--liquibase formatted sql logicalFilePath:db/schema/postgresql/0070_token_counts.sql

--changeset ctxasm:pg-0070-content-tokens dbms:postgresql splitStatements:false
--comment: the o200k_base token count of each row version's content, computed by the writer (Python) so
--comment: assembly need not count stored text again; NULL = not known (the fitter counts the text itself).
--comment: The history tables get the column too: keep_row_version copies columns by name.
DO $$
DECLARE
    l_table text;
BEGIN
    FOR l_table IN SELECT table_name FROM ctxasm.memory_type ORDER BY ordinal LOOP
        EXECUTE format('ALTER TABLE ctxasm.%I ADD COLUMN content_tokens integer '
                       'CONSTRAINT %I CHECK (content_tokens >= 0)', l_table, l_table || '_content_tokens_check');
        EXECUTE format('ALTER TABLE ctxasm.%I ADD COLUMN content_tokens integer', l_table || '_history');
    END LOOP;
END;
$$;
--rollback DO $$ DECLARE l_table text; BEGIN FOR l_table IN SELECT table_name FROM ctxasm.memory_type LOOP EXECUTE format('ALTER TABLE ctxasm.%I DROP COLUMN content_tokens', l_table); EXECUTE format('ALTER TABLE ctxasm.%I DROP COLUMN content_tokens', l_table || '_history'); END LOOP; END; $$;
