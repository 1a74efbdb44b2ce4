-- Indexes of the hot paths (ingest: seen_events; checker: runs), made cheaper to maintain.
--
-- seen_events_by_time serves one statement, the prune (DELETE ... WHERE seen_at < now() - keep),
-- yet as a B-tree it cost every de-duplicated event a second index insert on the ingest path.
-- Rows are appended as events arrive, so seen_at follows the table's physical order and a BRIN
-- index (one summary per 128 pages, kilobytes for millions of rows) finds the old rows as well:
-- an insert into an unsummarized range at the end of the table writes nothing to it
-- (autosummarize summarizes a range once it is full).
DROP INDEX seen_events_by_time;
CREATE INDEX seen_events_by_time ON seen_events USING brin (seen_at) WITH (autosummarize = on);

-- Event ids and run ids are identifiers, compared only for equality (and run ids, UUIDv7, in
-- time order, which is their byte order). Under the database's collation every comparison of
-- a B-tree insert into their primary keys went through strcoll; under "C" it is a memcmp.
-- Equality is byte equality under any deterministic collation, so uniqueness is unchanged.
-- Only the indexes are rebuilt (same type: the table is not rewritten).
ALTER TABLE seen_events ALTER COLUMN id TYPE text COLLATE "C";
ALTER TABLE runs ALTER COLUMN run_id TYPE text COLLATE "C";
