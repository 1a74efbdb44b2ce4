-- The full engine: schedule change log for the in-memory index, run counters that serialize
-- concurrency decisions across trigd instances, and the columns the checker needs.

-- Every apply, update, suspend, resume and delete appends here in its own transaction; a
-- running trigd follows the log (seq > last seen) to refresh its reverse index incrementally.
CREATE TABLE schedule_changes (
  seq          bigserial PRIMARY KEY,
  schedule_id  bigint NOT NULL,
  at           timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE schedules ADD COLUMN concurrency_group text;

-- One row per schedule and one per concurrency group. The constraint checker locks these rows
-- (FOR UPDATE, in id/name order) before it counts active runs, and a run's end decrements
-- them in the same transaction that records the end: two checkers can never both see a free
-- slot (no check-then-act race), whatever the number of trigd instances.
CREATE TABLE schedule_runtime (
  schedule_id    bigint PRIMARY KEY,
  active_runs    integer NOT NULL DEFAULT 0 CHECK (active_runs >= 0),
  last_launch_at timestamptz
);
CREATE TABLE group_runtime (
  name         text PRIMARY KEY,
  active_runs  integer NOT NULL DEFAULT 0 CHECK (active_runs >= 0)
);

ALTER TABLE jobs ADD COLUMN concurrency_group text;
ALTER TABLE jobs ADD COLUMN last_decision text;      -- the checker's last reason, to log changes only
ALTER TABLE jobs ADD COLUMN forced boolean NOT NULL DEFAULT false;
-- A run's end wakes the waiting jobs of its schedule and of its group.
CREATE INDEX jobs_waiting_by_schedule ON jobs (schedule_id) WHERE state = 'pending_constraint';
CREATE INDEX jobs_waiting_by_group ON jobs (concurrency_group)
  WHERE state = 'pending_constraint' AND concurrency_group IS NOT NULL;
-- The checker's claim order: highest priority first, then order of readiness.
CREATE INDEX jobs_claim ON jobs (priority DESC, ready_at, id)
  WHERE state IN ('pending_trigger', 'pending_constraint');

ALTER TABLE runs ADD COLUMN attempt_started_at timestamptz;
ALTER TABLE time_triggers ADD COLUMN leaf integer NOT NULL DEFAULT 0;

-- Appends entries to a bounded history (the newest 50 are kept).
CREATE FUNCTION trigd_append_history(h jsonb, add jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_array_length(h || add) <= 50 THEN h || add ELSE
    (SELECT coalesce(jsonb_agg(e ORDER BY i), '[]'::jsonb)
       FROM jsonb_array_elements(h || add) WITH ORDINALITY t(e, i)
      WHERE i > jsonb_array_length(h || add) - 50) END
$$;
