-- A schedule's run counters (schedule_runtime) are created when it is applied, not by the
-- checker that first launches it: the launch path then only locks and updates them (an insert
-- of each new schedule's row in the check was a twentieth of a storm's server time).
-- Schedules applied before this migration get theirs here. docs/adr/0174-run-counters-at-apply.md.
INSERT INTO schedule_runtime (schedule_id) SELECT id FROM schedules ORDER BY id ON CONFLICT DO NOTHING;
