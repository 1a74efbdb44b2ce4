-- A schedule's version keeps counting across a delete: `namespace/name` deleted and applied
-- again is version n+1, not 1 again, so a launch request's schedule_version (and a job's)
-- names one document (the audit of 2026-11-25 saw two launch requests of one name, both
-- version 1, with different args). The delete records the last version here; the next insert
-- of the name starts after it.
CREATE TABLE deleted_schedule_versions (
  name    text PRIMARY KEY,
  version integer NOT NULL
);
-- Names deleted before this migration: their jobs keep the versions they had.
INSERT INTO deleted_schedule_versions (name, version)
  SELECT schedule_name, max(schedule_version) FROM jobs
  WHERE schedule_name NOT IN (SELECT name FROM schedules) GROUP BY schedule_name;
