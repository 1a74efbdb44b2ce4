-- A fire time has one identity (SPEC §5), whether trigd's checker or a producer's tick on
-- trigd.events.time decides it. trigd's own ticks leave no de-duplication id (a storm of
-- 100,000 would write 100,000 rows); what the time trigger's row says is enough:
-- - every fire time in (anchor, last_fire_time] was decided by trigd: produced, unless it lies
--   in `not_fired` (skipped by the catch-up policy or the window). A producer's tick for a
--   produced one is a duplicate; for a skipped one it is a backfill and is applied.
-- - `ticked_until`: the latest fire time not decided yet that a producer's tick applied (its
--   identity is then in seen_events); the checker does not produce those again.
ALTER TABLE time_triggers ADD COLUMN not_fired tstzmultirange NOT NULL DEFAULT '{}',
                          ADD COLUMN ticked_until timestamptz;
