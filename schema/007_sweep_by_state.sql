-- The run sweep looks for started runs that missed their heartbeat and for launch requests no
-- worker took within the queued timeout. Both searches used one index over launched and running
-- runs, so finding the silent running ones walked every queued run too: with 26,000 launch
-- requests waiting for workers, each sweep (every 500 ms) read 2,400 heap pages to find none,
-- 20-35 ms of server time. One index per state: the running branch reads only running runs,
-- the queued branch only the range older than the queued timeout.
CREATE INDEX runs_queued ON runs (last_seen_at) WHERE state = 'launched';
CREATE INDEX runs_running ON runs (last_seen_at) WHERE state = 'running';
DROP INDEX runs_heartbeat;
