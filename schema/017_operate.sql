-- Operating runs and schedules (SPEC §9, docs/adr/0111-operator-verbs.md).
-- A schedule's run_timeout in milliseconds (NULL: none), set by apply, so the run sweep finds
-- the runs past it without parsing documents.
ALTER TABLE schedules ADD COLUMN run_timeout_ms bigint;
-- A job opened by `trigctl runs rerun RUN`: the run it reruns. `runs show` of each names the
-- other (rerun_of, reruns).
ALTER TABLE jobs ADD COLUMN rerun_of text;
CREATE INDEX jobs_by_rerun_of ON jobs (rerun_of) WHERE rerun_of IS NOT NULL;
-- What operators did through trigctl (runs started, rerun, cancelled; backfill ticks sent), for
-- trigd's counters: trigctl appends a row, a trigd instance takes and deletes the rows
-- (trigd_operator_actions_total{action}, and trigd_runs_total{outcome="cancelled"}).
CREATE TABLE operator_actions (
  seq     bigserial PRIMARY KEY,
  action  text NOT NULL,
  count   integer NOT NULL
);
