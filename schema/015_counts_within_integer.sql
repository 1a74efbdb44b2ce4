-- Every count of a schedule document has one range, 1..2147483647, that of the integer columns
-- it meets (engine/model/schedule.h): a larger value failed every ingest transaction of the
-- schedule (retry.max_attempts against runs.max_attempts) or now fails to parse when the
-- document is read back, which would leave the schedule silently unused. Stored documents are
-- brought into the range: a count beyond 2147483647 is never reached, so 2147483647 means the
-- same. Only trigd's own fields are touched, never program.args.
CREATE FUNCTION trigd_clamp_count(v jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(v) = 'number' AND v::text::numeric > 2147483647 THEN '2147483647'::jsonb ELSE v END
$$;

-- A trigger tree (partition, program, all, any) with each leaf's count clamped.
CREATE FUNCTION trigd_clamp_trigger(t jsonb) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  kind text;
BEGIN
  IF jsonb_typeof(t) <> 'object' THEN
    RETURN t;
  END IF;
  FOREACH kind IN ARRAY ARRAY['partition', 'program'] LOOP
    IF jsonb_typeof(t->kind) = 'object' AND t->kind ? 'count' THEN
      t := jsonb_set(t, ARRAY[kind, 'count'], trigd_clamp_count(t->kind->'count'));
    END IF;
  END LOOP;
  FOREACH kind IN ARRAY ARRAY['all', 'any'] LOOP
    IF jsonb_typeof(t->kind) = 'array' THEN
      t := jsonb_set(t, ARRAY[kind],
                     (SELECT coalesce(jsonb_agg(trigd_clamp_trigger(c) ORDER BY i), '[]'::jsonb)
                        FROM jsonb_array_elements(t->kind) WITH ORDINALITY AS e(c, i)));
    END IF;
  END LOOP;
  RETURN t;
END
$$;

CREATE FUNCTION trigd_clamp_document(d jsonb) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  p text[];
BEGIN
  FOREACH p SLICE 1 IN ARRAY ARRAY[ARRAY['retry', 'max_attempts', ''], ARRAY['constraints', 'max_concurrent_runs', ''],
                                   ARRAY['constraints', 'concurrency_group', 'max'],
                                   ARRAY['constraints', 'max_runs_per', 'count']] LOOP
    p := array_remove(p, '');
    IF d #> p IS NOT NULL THEN
      d := jsonb_set(d, p, trigd_clamp_count(d #> p));
    END IF;
  END LOOP;
  IF d ? 'trigger' THEN
    d := jsonb_set(d, '{trigger}', trigd_clamp_trigger(d->'trigger'));
  END IF;
  RETURN d;
END
$$;

UPDATE schedules SET document = trigd_clamp_document(document) WHERE document <> trigd_clamp_document(document);

DROP FUNCTION trigd_clamp_document(jsonb);
DROP FUNCTION trigd_clamp_trigger(jsonb);
DROP FUNCTION trigd_clamp_count(jsonb);
