-- The run counters are updated by every checker batch that launches (one row per schedule it
-- launched) and by every run's end. Packed full, their pages rarely had room for the new row
-- version, so most updates were not HOT: a new primary-key entry each and about twice the WAL
-- (EXPLAIN (ANALYZE, WAL) of 500 counter updates, ten each: 756-1,196 WAL records and 1.5-2.8
-- ms packed, 511 records and 0.9-1.0 ms at fillfactor 50). Half of each page is left free for
-- the next version; the rows already there are rewritten so that theirs have room too.
-- docs/adr/0176-run-counters-leave-room-on-their-pages.md.
ALTER TABLE schedule_runtime SET (fillfactor = 50);
ALTER TABLE group_runtime SET (fillfactor = 50);
CLUSTER schedule_runtime USING schedule_runtime_pkey;
CLUSTER group_runtime USING group_runtime_pkey;
