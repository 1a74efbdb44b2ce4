-- Lineages (SPEC §10, docs/adr/0115 to 0119): the DAG run each run belongs to.

-- A correlated schedule holds one open job per (schedule, lineage); every other schedule keeps
-- lineage '' while its job is open, so the index still allows one open job per schedule. A job
-- that completes gets the lineage its run will have (core/lineage.h), so a lineage is active
-- while a job of it waits on its constraints.
ALTER TABLE jobs ADD COLUMN lineage text NOT NULL DEFAULT '';
DROP INDEX jobs_one_open;
CREATE UNIQUE INDEX jobs_one_open ON jobs (schedule_id, lineage) WHERE state = 'pending_trigger';
CREATE INDEX jobs_active_by_lineage ON jobs (lineage)
  WHERE state IN ('pending_trigger', 'pending_constraint') AND lineage <> '';

-- A run's lineage, every lineage of its upstream runs when they were several, and the worker
-- that reported on it last. Runs from before this migration have none (null).
ALTER TABLE runs ADD COLUMN lineage text,
                 ADD COLUMN lineages jsonb,
                 ADD COLUMN worker text;
CREATE INDEX runs_by_lineage ON runs (lineage, state) WHERE lineage IS NOT NULL;

-- One row per lineage, written when its first run launches: what `lineages list` reads, newest
-- first through the primary key (lineage ids are UUIDv7 run ids); the state of each is derived
-- through runs_by_lineage and jobs_active_by_lineage.
CREATE TABLE lineages (
  id          text PRIMARY KEY,
  started_at  timestamptz NOT NULL,
  ended_at    timestamptz,          -- set when the lineage was last seen ending (metric)
  outcome     text                  -- succeeded or failed, with ended_at
);

-- Lineages that failed for a correlated schedule: an event of one opens no job of it until
-- expires_at (the schedule's timeout, else a day; retention deletes expired rows).
CREATE TABLE failed_lineages (
  schedule_id  bigint NOT NULL,
  lineage      text NOT NULL,
  failed_at    timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (schedule_id, lineage)
);
CREATE INDEX failed_lineages_by_lineage ON failed_lineages (lineage);
CREATE INDEX failed_lineages_expiry ON failed_lineages (expires_at);
