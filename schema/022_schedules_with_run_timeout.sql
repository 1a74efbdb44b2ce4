-- The sweep (PgStore::SweepRuns, every 500 ms) looks for runs past their schedule's run_timeout,
-- starting from the schedules that set one. Without an index that was a sequential scan of every
-- schedule on every sweep: 75 ms at 100,000 schedules none of which sets a timeout (EXPLAIN
-- ANALYZE), 150 ms each in a storm's statement log, on the checker thread that also ticks.
-- Partial: only the few schedules with a run_timeout have an entry, so an apply of the others
-- writes nothing more. docs/adr/0157-sweep-reads-only-schedules-with-a-run-timeout.md.
CREATE INDEX schedules_with_run_timeout ON schedules (id) WHERE run_timeout_ms IS NOT NULL;
