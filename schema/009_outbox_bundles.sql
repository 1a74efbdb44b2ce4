-- Outbox bundles (engine/store/outbox_bundle.h): one row carries up to 1,000 messages for one
-- topic, as netstrings in `payload`. A tick transaction writes its ticks' copies for observers
-- (trigd.events.time) this way instead of one row each: in a 100,000-schedule storm those
-- rows were half of everything the outbox wrote, claimed and deleted.
-- A bundle of 1,000 ticks is about 250 KB: stored out of line uncompressed (EXTERNAL), since
-- compressing it would cost more CPU than the disk it saves for a row deleted within seconds.
-- Rows below the TOAST threshold (every single message) are not affected.
ALTER TABLE outbox ADD COLUMN bundle boolean NOT NULL DEFAULT false;
ALTER TABLE outbox ALTER COLUMN payload SET STORAGE EXTERNAL;
CREATE INDEX outbox_bundles ON outbox (id) WHERE bundle;
