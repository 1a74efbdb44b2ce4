-- How far each consumer group has read each partition, in time: caught_up_at is a moment by
-- which everything produced to the partition was committed here (its position had reached the
-- end the broker reported then). The run sweep counts a run's silence only up to the oldest of
-- these on the program topic: a worker's heartbeats still unread while trigd was down, or
-- while a partition waited for a new owner, are not silence (the audit of 2026-11-25 saw a
-- restart longer than heartbeat_timeout declare a healthy run lost and launch it again).
ALTER TABLE consumer_offsets ADD COLUMN caught_up_at timestamptz;
