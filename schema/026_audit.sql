-- The audit (docs/security.md#audit, docs/adr/0215-audit-in-the-changing-transaction.md): who
-- changed what, one row per change, written in the transaction of the change itself, so a
-- change rolled back leaves none and a change committed always has one.
-- action: apply, delete, suspend, resume, start, cancel, rerun, backfill. actor: token:NAME
-- (the API), os:USER@HOST (trigctl straight to PostgreSQL). at: the transaction's time, as the
-- histories' entries. run_id: the run a cancel or rerun names. detail: what changed.
CREATE TABLE audit (
  seq        bigserial PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT now(),
  actor      text NOT NULL,
  action     text NOT NULL,
  namespace  text NOT NULL,
  schedule   text NOT NULL,
  run_id     text,
  detail     jsonb NOT NULL DEFAULT '{}'
);
-- `audit list` reads newest first (seq backwards), filtered by time, actor or namespace; the
-- retention deletes by time.
CREATE INDEX audit_by_at ON audit (at);
CREATE INDEX audit_by_actor ON audit (actor, seq);
CREATE INDEX audit_by_namespace ON audit (namespace, seq);
-- Who opened a job by hand (runs start, runs rerun): `runs show` names them (started_by_hand).
-- A rerun copies its run's triggered_by, whose manual entry names the first starter only.
ALTER TABLE jobs ADD COLUMN started_by text;
