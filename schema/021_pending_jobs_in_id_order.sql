-- `trigctl jobs list --state pending_constraint` (and the API's jobs list) shows the newest jobs
-- of a pending state first. With the id in the partial index, a backward scan of it gives that
-- order and stops at the limit. With the state alone, the planner chose between this index plus
-- a sort and the primary key backwards with a filter, and made either choice on the same data
-- depending on ANALYZE's sample; the second reads every newer job of other states first.
DROP INDEX jobs_by_state;
CREATE INDEX jobs_by_state ON jobs (state, id) WHERE state IN ('pending_trigger', 'pending_constraint');
