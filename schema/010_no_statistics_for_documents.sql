-- No planner statistics for the JSON documents and texts trigd stores but never filters,
-- joins or sorts on: a job's trigger state, triggering events and decision history, a run's
-- launch request and history. ANALYZE (autovacuum's, once a minute on a busy database) spent
-- most of its time building most-common-value lists and histograms of these, comparing jsonb
-- values: on 60,000 jobs, ANALYZE jobs took 478-509 ms with them and 167-221 ms without, runs
-- 210-274 ms and 165-214 ms. That CPU was taken from the ingest and checker transactions on a
-- small machine; the latency benchmark's slowest second lined up with autovacuum's pass.
-- No statement filters, joins or sorts on them, so no plan depended on those statistics.
ALTER TABLE jobs ALTER COLUMN history SET STATISTICS 0,
                 ALTER COLUMN trigger_state SET STATISTICS 0,
                 ALTER COLUMN triggered_by SET STATISTICS 0;
ALTER TABLE runs ALTER COLUMN request SET STATISTICS 0,
                 ALTER COLUMN history SET STATISTICS 0;
