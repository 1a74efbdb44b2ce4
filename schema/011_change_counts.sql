-- What a schedule change (trigctl apply, suspend, delete) discarded and killed, for trigd's
-- counters: the change runs in trigctl's process, so trigd_jobs_total{transition="discarded"}
-- and trigd_runs_total{outcome="killed"} never saw those jobs and runs. trigd's checker takes
-- each count once (PgStore::TakeChangeCounts sets it back to 0), whichever instance comes first.
ALTER TABLE schedule_changes ADD COLUMN jobs_discarded integer NOT NULL DEFAULT 0,
                             ADD COLUMN runs_killed integer NOT NULL DEFAULT 0;
CREATE INDEX schedule_changes_uncounted ON schedule_changes (seq) WHERE jobs_discarded > 0 OR runs_killed > 0;
