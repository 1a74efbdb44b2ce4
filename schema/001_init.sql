-- trigd's state. Every table here is written only by trigd and trigctl.

-- Schedules: the canonical document, a version bumped on each change, and a hash that
-- makes re-applying an unchanged document a no-op.
CREATE TABLE schedules (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL UNIQUE,            -- namespace/name
  version     integer NOT NULL,
  doc_hash    text NOT NULL,
  document    jsonb NOT NULL,
  state       text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'suspended')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per leaf trigger, indexed by event key: the durable reverse index.
CREATE TABLE schedule_triggers (
  schedule_id bigint NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  leaf        integer NOT NULL,
  event_key   text NOT NULL,
  PRIMARY KEY (schedule_id, leaf)
);
CREATE INDEX schedule_triggers_by_key ON schedule_triggers (event_key);

-- Time-triggered schedules: the next fire time to produce and the last one produced.
-- A row lock on it is what makes one instance, and only one, produce a fire time.
CREATE TABLE time_triggers (
  schedule_id     bigint PRIMARY KEY REFERENCES schedules(id) ON DELETE CASCADE,
  anchor          timestamptz NOT NULL,
  last_fire_time  timestamptz,
  next_fire_at    timestamptz NOT NULL
);
CREATE INDEX time_triggers_due ON time_triggers (next_fire_at);

-- Consumed positions, committed with the job changes they caused.
CREATE TABLE consumer_offsets (
  group_id    text NOT NULL,
  topic       text NOT NULL,
  partition   integer NOT NULL,
  next_offset bigint NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (group_id, topic, partition)
);

-- Ids of applied events (those that touched a job or a run), for de-duplication.
CREATE TABLE seen_events (
  id       text PRIMARY KEY,
  seen_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX seen_events_by_time ON seen_events (seen_at);

CREATE TABLE jobs (
  id                bigserial PRIMARY KEY,
  schedule_id       bigint NOT NULL,             -- no FK: jobs outlive a deleted schedule
  schedule_name     text NOT NULL,
  schedule_version  integer NOT NULL,
  state             text NOT NULL,
  priority          integer NOT NULL DEFAULT 0,
  trigger_state     jsonb NOT NULL,
  triggered_by      jsonb NOT NULL DEFAULT '[]',
  history           jsonb NOT NULL DEFAULT '[]', -- bounded decision history
  opened_at         timestamptz NOT NULL,
  first_event_at    timestamptz,                 -- receipt of the first event (latency metric)
  ready_at          timestamptz,                 -- trigger complete
  next_check_at     timestamptz,
  finished_at       timestamptz,
  discard_reason    text
);
-- At most one job per schedule collects events.
CREATE UNIQUE INDEX jobs_one_open ON jobs (schedule_id) WHERE state = 'pending_trigger';
CREATE INDEX jobs_due ON jobs (next_check_at)
  WHERE state IN ('pending_trigger', 'pending_constraint');
CREATE INDEX jobs_by_schedule ON jobs (schedule_id, id);
CREATE INDEX jobs_by_state ON jobs (state) WHERE state IN ('pending_trigger', 'pending_constraint', 'pending_launch');

-- Runs: one per launched job (UNIQUE job_id: the same job never gets two runs).
CREATE TABLE runs (
  run_id             text PRIMARY KEY,
  job_id             bigint NOT NULL UNIQUE,
  schedule_id        bigint NOT NULL,
  schedule_name      text NOT NULL,
  program            text NOT NULL,
  target             text NOT NULL,
  concurrency_group  text,
  state              text NOT NULL,  -- launched, running, retry_wait, succeeded, failed, killed
  attempt            integer NOT NULL DEFAULT 1,
  max_attempts       integer NOT NULL DEFAULT 1,
  heartbeat_timeout_ms bigint NOT NULL,
  launched_at        timestamptz NOT NULL,
  last_seen_at       timestamptz NOT NULL,
  next_attempt_at    timestamptz,
  finished_at        timestamptz,
  reason             text,
  request            jsonb NOT NULL,
  history            jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX runs_active_by_schedule ON runs (schedule_id)
  WHERE state IN ('launched', 'running', 'retry_wait');
CREATE INDEX runs_active_by_group ON runs (concurrency_group)
  WHERE state IN ('launched', 'running', 'retry_wait') AND concurrency_group IS NOT NULL;
CREATE INDEX runs_by_schedule_time ON runs (schedule_id, launched_at);
CREATE INDEX runs_heartbeat ON runs (last_seen_at) WHERE state IN ('launched', 'running');
CREATE INDEX runs_retry ON runs (next_attempt_at) WHERE state = 'retry_wait';

-- The outbox: messages written in the transaction that decided them, published by the relay.
CREATE TABLE outbox (
  id          bigserial PRIMARY KEY,
  topic       text NOT NULL,
  key         text,
  payload     text NOT NULL,
  job_id      bigint,           -- a launch request marks its job launched once confirmed
  created_at  timestamptz NOT NULL DEFAULT now()
);
