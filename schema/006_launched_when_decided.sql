-- A job is marked launched in the transaction that decides its launch, no longer a second time
-- by the relay once the broker confirms the request. The outbox row written in that same
-- transaction already guarantees the request is published (at least once, same run id), so
-- the second update of the job (a non-HOT update: a new row version, its indexes, its history
-- rewritten) bought nothing but a state name, and cost a storm launch a third of its server
-- time. "Decided but not yet published" is now a fact about the outbox: a row with a job_id.
--
-- The event-to-launch latency (trigd_event_to_launch_seconds) is still measured at the
-- broker's confirmation: the outbox row carries the time the job became ready.
ALTER TABLE outbox ADD COLUMN ready_at timestamptz;
UPDATE outbox o SET ready_at = coalesce(j.ready_at, j.opened_at) FROM jobs j WHERE o.job_id = j.id;
UPDATE jobs SET state = 'launched', finished_at = now(),
       history = trigd_append_history(history, jsonb_build_array(jsonb_build_object(
         'at', now(), 'what', 'launched (state moved by migration 006)')))
 WHERE state = 'pending_launch';
-- No index on outbox.job_id: the relay keeps the outbox short, and the lookups by job (`trigctl
-- jobs why`, a schedule delete) are rare; every launch would pay for the index.
DROP INDEX jobs_by_state;
CREATE INDEX jobs_by_state ON jobs (state) WHERE state IN ('pending_trigger', 'pending_constraint');
