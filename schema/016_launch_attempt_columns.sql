-- A launch request's attempt fields are columns (docs/adr/0075): runs.request holds the fields
-- every attempt of a run shares (a template, core/launch_request.h), runs.attempt and
-- runs.attempt_launched_at the current attempt's, and an outbox row of a launch request the
-- attempt it publishes. The relay places attempt, heartbeat_timeout, launched_at and start_by
-- into the template when it publishes, so a retry changes columns and never rewrites JSON in
-- SQL (it used a regular expression over the request, with a jsonb fallback).
ALTER TABLE runs ADD COLUMN attempt_launched_at timestamptz;
ALTER TABLE outbox ADD COLUMN attempt integer,
                   ADD COLUMN launched_at timestamptz,
                   ADD COLUMN heartbeat_timeout_ms bigint;

-- Runs that may still be retried or ended by trigd get their template and their attempt's launch
-- time from the request stored whole. A finished run keeps its request as published (nothing
-- reads it back), and an outbox row without attempt is published as it is.
UPDATE runs SET attempt_launched_at = coalesce((request::jsonb->>'launched_at')::timestamptz, last_seen_at),
                request = (request::jsonb - 'attempt' - 'heartbeat_timeout' - 'launched_at' - 'start_by')::text
WHERE state IN ('launched', 'running', 'retry_wait');
