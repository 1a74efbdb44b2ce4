-- A schedule's version keeps counting across a delete: `namespace/name` deleted and applied
-- again is version n+1, not 1 again, so a launch request's schedule_version (and a job's)
-- names one document (the audit of 2026-11-25 saw two launch requests of one name, both
-- version 1, with different args). The delete records the last version here; the next insert
-- of the name starts after it.
--
-- It records the deleted schedule's id too: applied again, the name is a new row with a new id,
-- and `trigctl jobs|runs list --schedule NAME` finds the name's jobs and runs by its ids (the
-- indexes jobs_by_schedule and runs_by_schedule_time; schedule_name has none, and the history
-- is never deleted), those of every incarnation.
CREATE TABLE deleted_schedule_versions (
  name    text PRIMARY KEY,
  version integer NOT NULL,
  ids     bigint[] NOT NULL DEFAULT '{}'  -- the ids the name had before its current one, ascending
);
-- Names deleted before this migration: their jobs keep the versions they had, and their ids are
-- those of their jobs whose schedule is gone (also for a name deleted and applied again before
-- this migration: the version is read only while the name has no schedule, and its next delete
-- sets it).
INSERT INTO deleted_schedule_versions (name, version, ids)
  SELECT schedule_name, max(schedule_version), array_agg(DISTINCT schedule_id) FROM jobs
  WHERE NOT EXISTS (SELECT 1 FROM schedules s WHERE s.id = jobs.schedule_id) GROUP BY schedule_name;
