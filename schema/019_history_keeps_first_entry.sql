-- A job's decision history keeps its first entry (`opened`, with the event that opened it) and
-- the newest ones (SPEC §11): trimming kept only the newest 50, so a job that collected many
-- events lost the record of how it began. The bound stays 50 entries; trigd_append_history
-- still concatenates without a call while the history is under it (003).
CREATE OR REPLACE FUNCTION trigd_trim_history(h jsonb, keep integer) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(jsonb_agg(e ORDER BY i), '[]'::jsonb)
    FROM jsonb_array_elements(h) WITH ORDINALITY t(e, i)
   WHERE i = 1 OR i > jsonb_array_length(h) - (keep - 1)
$$;
