// What the ingest and checker transactions do for lineages (SPEC §10, docs/adr/0115 to 0118),
// apart from the columns they write: the decisions are core's (core/accumulator.h,
// core/lineage.h); these run the statements. Each takes the caller's transaction.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "core/accumulator.h"
#include "core/lineage.h"
#include "model/event.h"

namespace trigd::pg_internal {

// Fills the lineage of the program events among `inputs` that carry none from the run they
// name (a worker's report may omit it), into the event and its payload (so triggered_by and the
// launch requests carry it). A filled event is copied into `filled` (stable addresses) and its
// input points at the copy. Events of runs trigd does not know stay without one (EventLineage:
// their run id). One statement, only when some program event lacks a lineage.
void FillReportLineages(pqxx::transaction_base& tx, std::vector<AccumulateInput>& inputs, std::deque<Event>& filled);

// Serialises the ingest transactions that touch one (correlated schedule, lineage): an
// advisory lock per pair, in a fixed order, taken before the open jobs are read. Without it two
// instances could, one open a job of L while the other remembers L as failed, neither seeing
// the other's uncommitted row. Returns whether any reached schedule is correlated.
bool LockCorrelatedLineages(pqxx::transaction_base& tx, const std::vector<AccumulateInput>& inputs,
                            const std::map<int64_t, ScheduleView>& schedules);

// The correlated schedules among `schedules`.
std::set<int64_t> CorrelatedSchedules(const std::map<int64_t, ScheduleView>& schedules);

// The open (pending_trigger) jobs of `schedule_ids`, locked, in id order.
// An open job from a row of (id, schedule_version, schedule_id, trigger_state, triggered_by,
// opened_at in ms, lineage): LoadOpenJobs's and ingestion's schedules_and_open_jobs.
OpenJob OpenJobFromRow(const pqxx::row& r);
std::vector<OpenJob> LoadOpenJobs(pqxx::transaction_base& tx, const std::set<int64_t>& schedule_ids);

// The unexpired failed lineages of the correlated schedules among `schedules`.
FailedLineageSet LoadFailedLineages(pqxx::transaction_base& tx, const std::map<int64_t, ScheduleView>& schedules);

// Remembers the lineages an Accumulate marked failed (a later expiry wins).
void StoreFailedLineages(pqxx::transaction_base& tx, const std::vector<FailedLineage>& failed);

// The lineage a job that completed will give its run, for jobs_active_by_lineage: a correlated
// job's own, else the oldest of its triggering program events' (empty when it has none: its run
// starts a lineage of its own id, unknown before the launch).
std::string ProspectiveLineage(const OpenJob& job);

// At a launch: the run's lineage from its job's triggering events (DecideRunLineage), parsed only
// when they hold a program event.
RunLineage LaunchLineage(const std::string& triggered_by_json, const std::string& run_id);

// For the runs that just ended, the lineages named and those of the jobs just discarded (by id):
// each such lineage with nothing active any more (no run launched, running or waiting for a
// retry, no job open or waiting) ends, succeeded or failed (SPEC §10), recorded in `lineages`
// once per ending. Returns the count per outcome, for trigd_lineages_total.
std::map<std::string, int> EndLineages(pqxx::transaction_base& tx, const std::vector<std::string>& ended_run_ids,
                                       const std::vector<std::string>& lineages = {},
                                       const std::vector<int64_t>& discarded_job_ids = {});

}  // namespace trigd::pg_internal
