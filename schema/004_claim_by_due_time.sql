-- The checker's claim ("due jobs, highest priority first") is decided by next_check_at alone.
-- next_check_at is set only while a job is pending (pending_trigger, pending_constraint); the
-- constraint below makes that an invariant. The claim's indexes are partial on
-- "next_check_at IS NOT NULL" instead of on the state, so the claim query needs no state
-- filter. Why: with a large history (finished jobs, next_check_at NULL), PostgreSQL multiplied
-- the selectivity of "state IN (pending...)" by that of "next_check_at <= now()" as if they
-- were independent, underestimated the due jobs a hundredfold, and chose jobs_due plus a full
-- sort of every due job on every claim (122 ms instead of 1.6 ms per claim of 1,000 with
-- 100,000 due and 1M finished jobs: a backlog drained in quadratic time). With one condition
-- its estimate is right: jobs_claim (priority order) when many are due, jobs_due when few are.
UPDATE jobs SET next_check_at = NULL
 WHERE next_check_at IS NOT NULL AND state NOT IN ('pending_trigger', 'pending_constraint');
ALTER TABLE jobs ADD CONSTRAINT jobs_next_check_only_while_pending
  CHECK (next_check_at IS NULL OR state IN ('pending_trigger', 'pending_constraint'));
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (next_check_at) WHERE next_check_at IS NOT NULL;
DROP INDEX jobs_claim;
CREATE INDEX jobs_claim ON jobs (priority DESC, ready_at, id) WHERE next_check_at IS NOT NULL;
