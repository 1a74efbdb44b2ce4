// Helpers shared by the PostgreSQL adapter's files. Only engine/store includes this.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "common/status.h"
#include "common/time.h"
#include "common/topic_names.h"
#include "core/envelope.h"
#include "model/event.h"
#include "model/job.h"
#include "model/run.h"
#include "store/admin.h"
#include "store/control_message.h"

#include "store/pg_conninfo.h"
#include "store/pg_store.h"

// PgStore's connection (pg_store.cc, poison.cc).
struct trigd::PgStore::Conn {
  explicit Conn(std::unique_ptr<pqxx::connection> c) : c(std::move(c)) {}
  std::unique_ptr<pqxx::connection> c;
};

namespace trigd::pg_internal {

// A state as an SQL literal ('pending_constraint'), from its enum's one name function: the
// store's SQL names job and run states only through these. Literals, not parameters: the
// partial indexes of schema/ (on the active states) serve a generic plan only for a literal.
inline std::string Sql(JobState s) { return std::string("'") + JobStateName(s) + "'"; }
inline std::string Sql(RunState s) { return std::string("'") + RunStateName(s) + "'"; }
// A state column read back; a name no enum value has is an error naming it (through Guard).
inline JobState JobStateOf(const pqxx::field& f) {
  if (auto s = JobStateFromName(std::string_view(f.c_str(), f.size()))) return *s;
  throw std::runtime_error("jobs.state: unknown state '" + std::string(std::string_view(f.c_str(), f.size())) + "'");
}
inline RunState RunStateOf(const pqxx::field& f) {
  if (auto s = RunStateFromName(std::string_view(f.c_str(), f.size()))) return *s;
  throw std::runtime_error("runs.state: unknown state '" + std::string(std::string_view(f.c_str(), f.size())) + "'");
}
// "('a', 'b')", for IN.
template <class... S>
std::string SqlIn(S... states) {
  std::string out;
  ((out += (out.empty() ? "(" : ", ") + Sql(states)), ...);
  return out + ")";
}

// Frees the run-counter slots of runs that ended or were killed: schedules first, then groups,
// each in sorted order, the order the checker locks them in (pg_store.cc).
void DecrementRunCounters(pqxx::transaction_base& tx, const std::vector<EndedRun>& ended);

// A transaction whose BEGIN rides on its first statement, and whose COMMIT may ride on its last
// (simple queries of several statements: "BEGIN; EXECUTE name(...)"), a round trip less each
// than pqxx::work's; on the path of every event and launch. Rolled back unless committed (a
// failed statement leaves it aborted: the rollback ends it). The connection must not be used
// otherwise while it is open.
class OpenTransaction {
 public:
  explicit OpenTransaction(pqxx::connection& c) : tx_(c) {}
  ~OpenTransaction() {
    if (!open_) return;
    try {
      tx_.exec("ROLLBACK");
    } catch (const std::exception&) {
      // The connection is gone or going, and its transaction with it.
    }
  }
  OpenTransaction(const OpenTransaction&) = delete;
  OpenTransaction& operator=(const OpenTransaction&) = delete;

  // BEGIN and the prepared statement `name` with `args` in one round trip.
  pqxx::result Begin(const std::string& name, const std::vector<std::string>& args) {
    return BeginWith(Execute(name, args));
  }
  // BEGIN and `sql` (statements; the last one's result is returned) in one round trip.
  pqxx::result BeginWith(const std::string& sql) {
    open_ = true;
    return tx_.exec("BEGIN; " + sql);
  }
  // `last` (statements whose results nobody reads, e.g. Execute's), then COMMIT, in one round trip.
  void Commit(const std::string& last = "") {
    tx_.exec(last.empty() ? "COMMIT" : last + "; COMMIT");
    open_ = false;
  }
  // "EXECUTE name(args)", each argument quoted, for a simple query.
  std::string Execute(const std::string& name, const std::vector<std::string>& args) {
    tx_.conn().prepare_now(name);  // EXECUTE needs it on the server (libpqxx prepares lazily)
    std::string sql = "EXECUTE " + name + "(";
    for (size_t i = 0; i < args.size(); ++i) sql += (i ? ", " : "") + tx_.quote(args[i]);
    return sql + ")";
  }
  void Rollback() {
    open_ = false;
    tx_.exec("ROLLBACK");
  }
  pqxx::transaction_base& tx() { return tx_; }

 private:
  pqxx::nontransaction tx_;
  bool open_ = false;
};

// Runs f, turning libpqxx's exceptions into statuses by what the caller does next:
// a lost connection is kUnavailable (reconnect, retry); a serialization failure, deadlock or
// unique violation between racing instances is kAborted (rerun the transaction).
// libpq's message on one line: its "\n\tIs the server running...\n" layout (newlines, a tab,
// trailing newlines) broke trigctl's one-line errors and trigd's log lines apart.
inline std::string OneLine(std::string_view what) {
  std::string out;
  for (char c : what) {
    if (c == '\n' || c == '\t' || c == '\r') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

template <class F>
auto Guard(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const pqxx::broken_connection& e) {
    return Unavailable(std::string("PostgreSQL: ") + OneLine(e.what()));
  } catch (const pqxx::transaction_rollback& e) {
    return Aborted(std::string("PostgreSQL: ") + OneLine(e.what()));
  } catch (const pqxx::unique_violation& e) {
    return Aborted(std::string("PostgreSQL: ") + OneLine(e.what()));
  } catch (const pqxx::in_doubt_error& e) {
    return Unavailable(std::string("PostgreSQL (commit in doubt): ") + OneLine(e.what()));
  } catch (const pqxx::undefined_table& e) {
    // A database the migrations have not run on (trigctl pointed at it before trigd started).
    return Internal(std::string("PostgreSQL: ") + OneLine(e.what()) +
                    " (is the database migrated? `trigd migrate`, or start trigd, applies schema/)");
  } catch (const pqxx::pqxx_exception& e) {
    return Internal(std::string("PostgreSQL: ") + OneLine(e.base().what()));
  } catch (const std::bad_alloc&) {
    // trigd's own memory, not the server's: never said as a PostgreSQL failure.
    return Internal("out of memory");
  } catch (const std::exception& e) {
    // A failure of trigd's own code around the query (a JSON value it could not read or
    // write): PostgreSQL said nothing, so its name is not put on it.
    return Internal(std::string("internal error: ") + OneLine(e.what()));
  }
}

// Whether `e` is a failure that running the same transaction again cannot fix, caused by what
// it wrote: a data exception (SQLSTATE class 22: a value out of a column's range, bad text), an
// integrity violation other than a unique violation (class 23: a check or not-null; a unique
// violation is a race with another instance, rerun), a program limit (class 54: a jsonb too
// large), an exception raised by a trigger or function (P0001), or a value trigd could not
// serialise (a JSON exception). Such a failure is one schedule's or one event's (PgStore's
// ingest isolates it, store/poison.cc), never the connection's.
inline bool IsDataError(const std::exception& e) {
  if (dynamic_cast<const nlohmann::json::exception*>(&e)) return true;
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e);
  if (!sql) return false;
  const std::string& state = sql->sqlstate();
  if (state.size() != 5) return false;
  const std::string_view cls = std::string_view(state).substr(0, 2);
  return cls == "22" || (cls == "23" && state != "23505") || cls == "54" || state == "P0001";
}

// Guard, noting in `*data_error` the message of a failure IsDataError recognises (the status
// returned is Guard's: kInternal).
template <class F>
auto Guard(F&& f, std::string* data_error) -> decltype(f()) {
  return Guard([&]() -> decltype(f()) {
    try {
      return f();
    } catch (const std::exception& e) {
      if (data_error && IsDataError(e)) *data_error = OneLine(e.what());
      throw;
    }
  });
}

// A connection to `pg`, with kDefaultPgConnectTimeout when neither `pg` nor libpq's own
// PGCONNECT_TIMEOUT sets one. A timeout is reported with the limit that expired.
inline Result<std::unique_ptr<pqxx::connection>> Connect(const std::string& pg) {
  const std::string conninfo = std::getenv("PGCONNECT_TIMEOUT") ? pg : WithConnectTimeout(pg, kDefaultPgConnectTimeout);
  try {
    return std::make_unique<pqxx::connection>(conninfo);
  } catch (const std::exception& e) {
    std::string why = OneLine(e.what());
    if (why.find("timeout expired") != std::string::npos) {
      const int limit = ConnectTimeoutOf(conninfo);
      why += " (no answer within the connect timeout" +
             (limit > 0 ? " of " + std::to_string(limit) + "s" : std::string()) +
             "; TRIGD_PG_CONNECT_TIMEOUT, or connect_timeout in TRIGD_PG, sets it)";
    }
    return Unavailable("cannot connect to PostgreSQL: " + why);
  }
}

// Timestamps cross the wire as epoch milliseconds (exact, no time-zone parsing).
inline TimePoint FromMillis(int64_t ms) { return TimePoint(Millis(ms)); }
inline int64_t ToMillis(TimePoint t) { return t.time_since_epoch().count(); }
// SQL expression for a timestamptz column as epoch milliseconds.
// floor, not the cast's rounding: a time read back must never be later than the stored one (a job
// made due at the transaction's now() is due within that same transaction).
#define TRIGD_MS(col) "floor(extract(epoch from " col ") * 1000)::bigint"

// The transaction's now() (its start), read back as trigd's clocks read it.
inline TimePoint DbNow(pqxx::transaction_base& tx) {
  return FromMillis(tx.exec1("SELECT " TRIGD_MS("now()"))[0].as<int64_t>());
}

// now() as trigd writes times (FormatTime: UTC, milliseconds, "Z"), for history entries and
// launch requests written by SQL, so that `jobs why` shows entries from trigctl and the sweep
// as "2026-11-25T11:33:51.529Z" like the engine's, not "2026-11-25T11:33:51.52998+00:00".
#define TRIGD_NOW_TEXT "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

// A run killed because its schedule was deleted: its state, reason and history entry (SQL,
// inside an UPDATE runs SET list). Used by `trigctl schedules delete` and by the run sweep.
inline std::string KilledByDeleteSet() {
  return "state=" + Sql(RunState::kKilled) +
         ", reason='schedule deleted', finished_at=now(), next_attempt_at=NULL, "
         "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
         ", "
         "'status', 'killed', 'reason', 'schedule deleted', 'attempt', attempt))) ";
}
// The columns of an ended run that AnnounceEndedRuns reads, in its order.
#define TRIGD_ENDED_RUN_COLUMNS "run_id, attempt, program, schedule_name, " TRIGD_RUN_START_BY_MS ", lineage"
// What such an UPDATE returns for KillByDeleteEvents.
#define TRIGD_KILLED_BY_DELETE_RETURNING "RETURNING concurrency_group, " TRIGD_ENDED_RUN_COLUMNS " "

// How trigd ended runs itself: the program event's status and reason, and its id's prefix
// (<prefix>:<run>:<attempt>), by which ingestion counts the event although the run ended.
struct RunEnding {
  const char* status;
  const char* reason;
  const char* id_prefix;
};

// trigd's own report for each run it ended (rows with TRIGD_ENDED_RUN_COLUMNS from column
// `first`), carrying the run's lineage (SPEC §10), written to the outbox for the program topic,
// so downstream schedules see the run end, and a control message, so no worker starts it: the
// attempt's request may be on the launch topic, where a worker of another group may read it later.
inline void AnnounceEndedRuns(pqxx::transaction_base& tx, const TopicNames& topics, const pqxx::result& ended,
                              int first, const RunEnding& how) {
  if (ended.empty()) return;
  const TimePoint now = FromMillis(tx.exec1("SELECT " TRIGD_MS("now()"))[0].as<int64_t>());
  for (const auto& r : ended) {
    Event e;
    const std::string run_id = r[first].as<std::string>(), program = r[first + 2].as<std::string>();
    const int64_t attempt = r[first + 1].as<int64_t>();
    e.id = std::string(how.id_prefix) + ":" + run_id + ":" + std::to_string(attempt);
    e.type = EventType::kProgram;
    e.time = now;
    e.payload = {{"program", program}, {"run_id", run_id},     {"status", how.status},
                 {"attempt", attempt}, {"reason", how.reason}, {"schedule", r[first + 3].as<std::string>()}};
    if (!r[first + 5].is_null()) e.payload["lineage"] = r[first + 5].as<std::string>();
    tx.exec_params("INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)", topics.events_program, program,
                   EnvelopeToJson(e).dump());
    AddControlMessage(tx, topics, {run_id, attempt, how.status, how.reason, true, StartByField(r[first + 4])}, now);
  }
}

// trigd's own `killed` report for each run a schedule delete killed (rows with
// TRIGD_ENDED_RUN_COLUMNS from column `first`, as TRIGD_KILLED_BY_DELETE_RETURNING gives them
// from column 1), written to the outbox for the program
// topic, as a lost run's `failed` is: downstream schedules see the run end
// (on_upstream_failure), which they would not otherwise
// (docs/adr/0020-delete-kills-and-announces.md). Reason
// schedule_deleted; id killed:<run>:<attempt>, which ingestion counts although the run ended.
inline void KillByDeleteEvents(pqxx::transaction_base& tx, const TopicNames& topics, const pqxx::result& killed,
                               int first = 1) {
  AnnounceEndedRuns(tx, topics, killed, first, {"killed", "schedule_deleted", "killed"});
}

// A run id from its time (ms since the epoch) and its random bits, formatted as
// "%08x-%04x-7%03x-%04x-%012llx" (ms's 48 bits, version 7, 12 bits of `hi`, the variant and 14
// bits of `lo`, 48 bits of `lo`) without printf: one per launch, it was 3% of trigd's CPU in the
// launch path (perf of the checker's window).
inline std::string FormatRunId(uint64_t ms, uint64_t hi, uint64_t lo) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(36, '-');
  auto put = [&out](size_t at, uint64_t v, int digits) {
    for (int i = digits - 1; i >= 0; --i, v >>= 4) out[at + static_cast<size_t>(i)] = kHex[v & 0xf];
  };
  put(0, (ms >> 16) & 0xffffffff, 8);
  put(9, ms & 0xffff, 4);
  out[14] = '7';
  put(15, hi & 0xfff, 3);
  put(19, 0x8000 | ((lo >> 48) & 0x3fff), 4);
  put(24, lo & 0xffffffffffffull, 12);
  return out;
}

// A UUIDv7 (RFC 9562): 48 bits of Unix time in milliseconds, then 74 random bits. Runs launched
// close in time get ids that sort together, so inserting a run touches the right edge of the
// runs primary key however long the history is. (Random v4 ids sent each insert to a random leaf
// page of that index: with millions of historic runs, a page to read and a full-page WAL image
// per launch.)
inline std::string NewRunId() {
  static thread_local uint64_t a = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  static thread_local uint64_t b = std::random_device{}() * 0xC2B2AE3D27D4EB4Full ^ std::random_device{}();
  auto next = [](uint64_t& x) {  // splitmix64
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const uint64_t ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  const uint64_t hi = next(a), lo = next(b);
  return FormatRunId(ms, hi, lo);
}

// `bytes` as text PostgreSQL can store: each byte that is not part of well-formed UTF-8 (RFC
// 3629), and each NUL, becomes U+FFFD. For bytes trigd passes on without parsing them (the
// Kafka key of a dead letter); returns `bytes` unchanged when they are already fine.
inline std::string ValidText(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : c != 0 && c < 0x80 ? 1 : 0;
    if (len == 3 && c > 0xEF) len = 0;
    bool ok = len > 0 && i + len <= bytes.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(bytes[i + k]) & 0xC0) == 0x80;
    if (ok && len >= 3) {
      // No overlong forms, no surrogates, nothing above U+10FFFF.
      const auto c1 = static_cast<unsigned char>(bytes[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 > 0x9F) && !(c == 0xF0 && c1 < 0x90) &&
           !(c == 0xF4 && c1 > 0x8F);
    }
    if (ok) {
      out.append(bytes.data() + i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    }
  }
  return out;
}

// What an apply checks before its transaction (each launch request fits the message limit).
Status CheckApplicable(const std::vector<Schedule>& schedules);
// An apply inside `tx`, up to its commit: the change log's lock and every write, NOTIFY
// included, and the audit rows naming `actor`. The caller commits (an apply) or rolls back (a dry
// run: the same path, nothing kept).
std::vector<ApplyOutcome> ApplyInTransaction(pqxx::work& tx, const std::vector<Schedule>& schedules,
                                             const Actor& actor);

}  // namespace trigd::pg_internal
