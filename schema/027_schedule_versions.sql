-- Every document a schedule name has had, by version: the console's schedule page lists them
-- and shows the difference between two (docs/adr/0231-schedule-versions-kept.md). An apply that
-- changes a document writes its row in the same transaction as the schedule's; a delete keeps
-- them (versions continue across a delete, schema/013, so (name, version) names one document).
CREATE TABLE schedule_versions (
  name        text NOT NULL,
  version     integer NOT NULL,
  document    jsonb NOT NULL,
  applied_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (name, version)
);
-- The documents stored before this migration are their schedules' current versions.
INSERT INTO schedule_versions (name, version, document, applied_at)
  SELECT name, version, document, updated_at FROM schedules ON CONFLICT DO NOTHING;
