-- Every launch inserts a run row, and each index of runs costs about as much as the row itself
-- (EXPLAIN (ANALYZE, WAL) of 20,000 run rows: 150 ms without an index, 80-100 ms more for each).
-- runs_active_by_schedule served two statements: `trigctl schedules list`'s count of active runs,
-- which now reads the schedule's run counter (schedule_runtime.active_runs, the number the
-- constraint checker decides with), and a schedule delete's kill of its runs waiting for a retry,
-- which goes through runs_retry (every run waiting for a retry) or runs_by_schedule_time.
-- docs/adr/0095-runs-indexes-a-query-needs.md.
DROP INDEX runs_active_by_schedule;
