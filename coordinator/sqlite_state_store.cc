// The SQLite StateStore. Schema (version 1), one file DIR/coordinator.db in WAL mode:
//
//   geotrain_meta(key PRIMARY KEY, value)   format = geotrain-coordinator, schema_version = 1,
//                                           next_worker_number, next_job_number
//   workers(id PRIMARY KEY, state, record)  record: a serialised v1.Worker
//   jobs(id PRIMARY KEY, number UNIQUE, name, state, submitted_unix_ms, record: v1.Job)
//   job_events(job_id, sequence, unix_ms, record: v1.JobEvent)          PRIMARY KEY (job_id,
//   sequence) job_log_lines(job_id, sequence, unix_ms, record: v1.LogLine)        PRIMARY KEY
//   (job_id, sequence) job_steps(job_id, step, generation, record: v1.JobStep)             PRIMARY
//   KEY (job_id, step) links(src, dst, throughput, samples, probe_samples, latency,
//   latency_samples,
//         probe_throughput, probe_latency, probed_unix_ms, probe_failures, updated_unix_ms)
//                                                                       PRIMARY KEY (src, dst)
//   job_keys(job_id PRIMARY KEY, frame_key)  frame_key: the job's 32-byte data-plane key, kept
//                                            out of the v1.Job record so no API returns it
//
// `links` and `job_keys` joined schema 1 later: they are created (IF NOT EXISTS) whenever a
// database is opened, so an older database gains them and an older coordinator, which never
// reads them, still opens the file (the core gives a job without a key a new one). An estimator is
// stored as its estimate and sample count, from which LinkTable rebuilds its weighted sum and
// weight exactly (link_table.h). Its figures in bytes per second and seconds are TEXT of 17
// significant digits, which parse back to the same double (sqlite_db.h binds no doubles, and
// SQLite's own REAL-to-text keeps only 15 digits).
//
// WAL with synchronous=NORMAL: a commit is in the WAL file before the call returns, so a
// coordinator killed with -9 loses nothing; only a power cut could lose the newest commits.
// DIR/coordinator.lock (flock) keeps a second coordinator off the same directory.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "coordinator/sqlite_db.h"
#include "coordinator/state_store.h"

namespace geotrain::coordinator {
namespace {

constexpr int kSchemaVersion = 1;
constexpr const char* kFormat = "geotrain-coordinator";

constexpr const char* kCreateSchema = R"sql(
CREATE TABLE geotrain_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE workers (id TEXT PRIMARY KEY, state INTEGER NOT NULL, record BLOB NOT NULL);
CREATE TABLE jobs (id TEXT PRIMARY KEY, number INTEGER NOT NULL UNIQUE, name TEXT NOT NULL,
                   state INTEGER NOT NULL, submitted_unix_ms INTEGER NOT NULL,
                   record BLOB NOT NULL);
CREATE INDEX jobs_by_state ON jobs (state);
CREATE TABLE job_events (job_id TEXT NOT NULL, sequence INTEGER NOT NULL,
                         unix_ms INTEGER NOT NULL, record BLOB NOT NULL,
                         PRIMARY KEY (job_id, sequence)) WITHOUT ROWID;
CREATE TABLE job_log_lines (job_id TEXT NOT NULL, sequence INTEGER NOT NULL,
                            unix_ms INTEGER NOT NULL, record BLOB NOT NULL,
                            PRIMARY KEY (job_id, sequence)) WITHOUT ROWID;
CREATE TABLE job_steps (job_id TEXT NOT NULL, step INTEGER NOT NULL,
                        generation INTEGER NOT NULL, record BLOB NOT NULL,
                        PRIMARY KEY (job_id, step)) WITHOUT ROWID;
INSERT INTO geotrain_meta (key, value) VALUES ('format', 'geotrain-coordinator'),
  ('schema_version', '1'), ('next_worker_number', '1'), ('next_job_number', '1');
)sql";

constexpr const char* kCreateLinks = R"sql(
CREATE TABLE IF NOT EXISTS links (src TEXT NOT NULL, dst TEXT NOT NULL,
                                  throughput TEXT NOT NULL, samples INTEGER NOT NULL,
                                  probe_samples INTEGER NOT NULL, latency TEXT NOT NULL,
                                  latency_samples INTEGER NOT NULL, probe_throughput TEXT NOT NULL,
                                  probe_latency TEXT NOT NULL, probed_unix_ms INTEGER NOT NULL,
                                  probe_failures INTEGER NOT NULL,
                                  updated_unix_ms INTEGER NOT NULL,
                                  PRIMARY KEY (src, dst)) WITHOUT ROWID;
)sql";

constexpr const char* kCreateJobKeys = R"sql(
CREATE TABLE IF NOT EXISTS job_keys (job_id TEXT PRIMARY KEY, frame_key BLOB NOT NULL)
  WITHOUT ROWID;
)sql";

// "job-12" -> 12; ids are ours, anything else sorts first.
int64_t JobNumber(const std::string& id) {
  constexpr const char* kPrefix = "job-";
  if (id.rfind(kPrefix, 0) != 0) return 0;
  try {
    return std::stoll(id.substr(4));
  } catch (const std::exception&) {
    return 0;
  }
}

// 17 significant digits: parses back to the very same double.
std::string DoubleText(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

StatusOr<double> ParseDouble(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    return DataLoss(where + ": \"" + text + "\" is not a finite number");
  }
  return value;
}

template <typename Message>
Status ParseRecord(const std::string& bytes, const std::string& where, Message* out) {
  if (!out->ParseFromString(bytes)) return DataLoss(where + ": the stored record does not parse");
  return OkStatus();
}

class SqliteStateStore final : public StateStore {
 public:
  SqliteStateStore(std::unique_ptr<SqliteDb> db, int lock_fd)
      : db_(std::move(db)), lock_fd_(lock_fd) {}

  ~SqliteStateStore() override {
    // Folds the WAL back into the main file so the directory holds one self-contained file.
    (void)db_->Exec("PRAGMA wal_checkpoint(TRUNCATE)");
    db_.reset();
    close(lock_fd_);
  }

  StatusOr<StoredState> Load() override {
    std::lock_guard<std::mutex> lock(mu_);
    StoredState state;
    {
      GEOTRAIN_ASSIGN_OR_RETURN(SqliteStatement query,
                                db_->Prepare("SELECT id, record FROM workers ORDER BY id"));
      while (true) {
        GEOTRAIN_ASSIGN_OR_RETURN(bool row, query.Step());
        if (!row) break;
        v1::Worker worker;
        GEOTRAIN_RETURN_IF_ERROR(ParseRecord(
            query.ColumnBlob(1), Where("workers row '" + query.ColumnText(0) + "'"), &worker));
        state.workers.push_back(std::move(worker));
      }
    }
    {
      GEOTRAIN_ASSIGN_OR_RETURN(SqliteStatement query,
                                db_->Prepare("SELECT id, record FROM jobs ORDER BY number"));
      while (true) {
        GEOTRAIN_ASSIGN_OR_RETURN(bool row, query.Step());
        if (!row) break;
        v1::Job job;
        GEOTRAIN_RETURN_IF_ERROR(ParseRecord(
            query.ColumnBlob(1), Where("jobs row '" + query.ColumnText(0) + "'"), &job));
        state.jobs.push_back(std::move(job));
      }
    }
    {
      GEOTRAIN_ASSIGN_OR_RETURN(
          SqliteStatement query,
          db_->Prepare("SELECT src, dst, throughput, samples, probe_samples, latency, "
                       "latency_samples, probe_throughput, probe_latency, probed_unix_ms, "
                       "probe_failures, updated_unix_ms FROM links ORDER BY src, dst"));
      while (true) {
        GEOTRAIN_ASSIGN_OR_RETURN(bool row, query.Step());
        if (!row) break;
        LinkFigures link;
        link.src_worker_id = query.ColumnText(0);
        link.dst_worker_id = query.ColumnText(1);
        const std::string row_name =
            Where("links row '" + link.src_worker_id + "' -> '" + link.dst_worker_id + "'");
        GEOTRAIN_ASSIGN_OR_RETURN(link.throughput_bytes_per_second,
                                  ParseDouble(query.ColumnText(2), row_name + " throughput"));
        link.samples = static_cast<uint64_t>(query.ColumnInt64(3));
        link.probe_samples = static_cast<uint64_t>(query.ColumnInt64(4));
        GEOTRAIN_ASSIGN_OR_RETURN(link.latency_seconds,
                                  ParseDouble(query.ColumnText(5), row_name + " latency"));
        link.latency_samples = static_cast<uint64_t>(query.ColumnInt64(6));
        GEOTRAIN_ASSIGN_OR_RETURN(link.probe_throughput_bytes_per_second,
                                  ParseDouble(query.ColumnText(7), row_name + " probe_throughput"));
        GEOTRAIN_ASSIGN_OR_RETURN(link.probe_latency_seconds,
                                  ParseDouble(query.ColumnText(8), row_name + " probe_latency"));
        link.probed_unix_ms = query.ColumnInt64(9);
        link.probe_failures = static_cast<uint64_t>(query.ColumnInt64(10));
        link.updated_unix_ms = query.ColumnInt64(11);
        if (link.probe_samples > link.samples) {
          return DataLoss(row_name + ": probe_samples exceed samples");
        }
        state.links.push_back(std::move(link));
      }
    }
    {
      GEOTRAIN_ASSIGN_OR_RETURN(SqliteStatement query,
                                db_->Prepare("SELECT job_id, frame_key FROM job_keys"));
      while (true) {
        GEOTRAIN_ASSIGN_OR_RETURN(bool row, query.Step());
        if (!row) break;
        state.frame_keys[query.ColumnText(0)] = query.ColumnBlob(1);
      }
    }
    GEOTRAIN_RETURN_IF_ERROR(LastSequences("job_events", &state.last_event_sequence));
    GEOTRAIN_RETURN_IF_ERROR(LastSequences("job_log_lines", &state.last_log_sequence));
    return state;
  }

  StatusOr<uint64_t> NextWorkerNumber() override { return NextNumber("next_worker_number"); }
  StatusOr<uint64_t> NextJobNumber() override { return NextNumber("next_job_number"); }

  Status PutWorker(const v1::Worker& worker) override {
    std::lock_guard<std::mutex> lock(mu_);
    GEOTRAIN_ASSIGN_OR_RETURN(
        SqliteStatement put,
        db_->Prepare("INSERT OR REPLACE INTO workers (id, state, record) VALUES (?1, ?2, ?3)"));
    put.BindText(1, worker.id());
    put.BindInt64(2, worker.state());
    put.BindBlob(3, worker.SerializeAsString());
    return put.Run();
  }

  Status PutJob(const v1::Job& job, const std::vector<v1::JobEvent>& events) override {
    std::lock_guard<std::mutex> lock(mu_);
    SqliteTransaction transaction(db_.get());
    GEOTRAIN_RETURN_IF_ERROR(transaction.status());
    GEOTRAIN_ASSIGN_OR_RETURN(
        SqliteStatement put,
        db_->Prepare("INSERT OR REPLACE INTO jobs (id, number, name, state, submitted_unix_ms, "
                     "record) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    put.BindText(1, job.id());
    put.BindInt64(2, JobNumber(job.id()));
    put.BindText(3, job.name());
    put.BindInt64(4, job.state());
    put.BindInt64(5, job.submitted_unix_ms());
    put.BindBlob(6, job.SerializeAsString());
    GEOTRAIN_RETURN_IF_ERROR(put.Run());
    for (const v1::JobEvent& event : events) {
      GEOTRAIN_ASSIGN_OR_RETURN(
          SqliteStatement append,
          db_->Prepare("INSERT OR REPLACE INTO job_events (job_id, sequence, unix_ms, record) "
                       "VALUES (?1, ?2, ?3, ?4)"));
      append.BindText(1, event.job_id());
      append.BindInt64(2, event.sequence());
      append.BindInt64(3, event.unix_ms());
      append.BindBlob(4, event.SerializeAsString());
      GEOTRAIN_RETURN_IF_ERROR(append.Run());
    }
    return transaction.Commit();
  }

  // WAL with synchronous=NORMAL: a commit is written to the WAL file but not synced, so an
  // fsync of that file makes every commit so far durable (the main file is synced by every
  // checkpoint before the WAL is reused).
  Status Sync() override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string wal = db_->path() + "-wal";
    const int fd = ::open(wal.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      // No WAL file: nothing was written since the last checkpoint folded it in.
      if (errno == ENOENT) return OkStatus();
      return Unavailable(wal + ": cannot open to sync: " + std::strerror(errno));
    }
    const int synced = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    if (synced != 0) return Unavailable(wal + ": fsync failed: " + std::strerror(error));
    return OkStatus();
  }

  Status PutFrameKey(const std::string& job_id, const std::string& frame_key) override {
    std::lock_guard<std::mutex> lock(mu_);
    GEOTRAIN_ASSIGN_OR_RETURN(
        SqliteStatement put,
        db_->Prepare("INSERT OR REPLACE INTO job_keys (job_id, frame_key) VALUES (?1, ?2)"));
    put.BindText(1, job_id);
    put.BindBlob(2, frame_key);
    return put.Run();
  }

  Status DeleteFrameKey(const std::string& job_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    GEOTRAIN_ASSIGN_OR_RETURN(SqliteStatement del,
                              db_->Prepare("DELETE FROM job_keys WHERE job_id = ?1"));
    del.BindText(1, job_id);
    return del.Run();
  }

  Status AppendLogLines(const std::string& job_id,
                        const std::vector<v1::SequencedLogLine>& lines) override {
    if (lines.empty()) return OkStatus();
    std::lock_guard<std::mutex> lock(mu_);
    SqliteTransaction transaction(db_.get());
    GEOTRAIN_RETURN_IF_ERROR(transaction.status());
    int64_t newest = 0;
    for (const v1::SequencedLogLine& line : lines) {
      GEOTRAIN_ASSIGN_OR_RETURN(
          SqliteStatement append,
          db_->Prepare("INSERT OR REPLACE INTO job_log_lines (job_id, sequence, unix_ms, record) "
                       "VALUES (?1, ?2, ?3, ?4)"));
      append.BindText(1, job_id);
      append.BindInt64(2, line.sequence());
      append.BindInt64(3, line.line().unix_ms());
      append.BindBlob(4, line.line().SerializeAsString());
      GEOTRAIN_RETURN_IF_ERROR(append.Run());
      newest = std::max(newest, line.sequence());
    }
    GEOTRAIN_ASSIGN_OR_RETURN(
        SqliteStatement prune,
        db_->Prepare("DELETE FROM job_log_lines WHERE job_id = ?1 AND sequence <= ?2"));
    prune.BindText(1, job_id);
    prune.BindInt64(2, newest - kMaxLogLinesPerJob);
    GEOTRAIN_RETURN_IF_ERROR(prune.Run());
    return transaction.Commit();
  }

  Status PutStep(const std::string& job_id, const v1::JobStep& step) override {
    std::lock_guard<std::mutex> lock(mu_);
    GEOTRAIN_ASSIGN_OR_RETURN(
        SqliteStatement put,
        db_->Prepare("INSERT OR REPLACE INTO job_steps (job_id, step, generation, record) "
                     "VALUES (?1, ?2, ?3, ?4)"));
    put.BindText(1, job_id);
    put.BindInt64(2, step.step());
    put.BindInt64(3, step.generation());
    put.BindBlob(4, step.SerializeAsString());
    return put.Run();
  }

  Status PutLinks(const std::vector<LinkFigures>& links,
                  const std::vector<std::string>& forgotten_workers) override {
    if (links.empty() && forgotten_workers.empty()) return OkStatus();
    std::lock_guard<std::mutex> lock(mu_);
    SqliteTransaction transaction(db_.get());
    GEOTRAIN_RETURN_IF_ERROR(transaction.status());
    for (const std::string& worker : forgotten_workers) {
      GEOTRAIN_ASSIGN_OR_RETURN(SqliteStatement drop,
                                db_->Prepare("DELETE FROM links WHERE src = ?1 OR dst = ?1"));
      drop.BindText(1, worker);
      GEOTRAIN_RETURN_IF_ERROR(drop.Run());
    }
    for (const LinkFigures& link : links) {
      GEOTRAIN_ASSIGN_OR_RETURN(
          SqliteStatement put,
          db_->Prepare("INSERT OR REPLACE INTO links (src, dst, throughput, samples, "
                       "probe_samples, latency, latency_samples, probe_throughput, "
                       "probe_latency, probed_unix_ms, probe_failures, updated_unix_ms) VALUES "
                       "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"));
      put.BindText(1, link.src_worker_id);
      put.BindText(2, link.dst_worker_id);
      put.BindText(3, DoubleText(link.throughput_bytes_per_second));
      put.BindInt64(4, static_cast<int64_t>(link.samples));
      put.BindInt64(5, static_cast<int64_t>(link.probe_samples));
      put.BindText(6, DoubleText(link.latency_seconds));
      put.BindInt64(7, static_cast<int64_t>(link.latency_samples));
      put.BindText(8, DoubleText(link.probe_throughput_bytes_per_second));
      put.BindText(9, DoubleText(link.probe_latency_seconds));
      put.BindInt64(10, link.probed_unix_ms);
      put.BindInt64(11, static_cast<int64_t>(link.probe_failures));
      put.BindInt64(12, link.updated_unix_ms);
      GEOTRAIN_RETURN_IF_ERROR(put.Run());
    }
    return transaction.Commit();
  }

  StatusOr<std::vector<v1::JobEvent>> EventsAfter(const std::string& job_id, int64_t after_sequence,
                                                  int limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    GEOTRAIN_ASSIGN_OR_RETURN(
        SqliteStatement query,
        db_->Prepare("SELECT sequence, record FROM job_events WHERE job_id = ?1 AND "
                     "sequence > ?2 ORDER BY sequence LIMIT ?3"));
    query.BindText(1, job_id);
    query.BindInt64(2, after_sequence);
    query.BindInt64(3, limit);
    std::vector<v1::JobEvent> events;
    while (true) {
      GEOTRAIN_ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) break;
      v1::JobEvent event;
      GEOTRAIN_RETURN_IF_ERROR(ParseRecord(query.ColumnBlob(1), Where("job_events row"), &event));
      events.push_back(std::move(event));
    }
    return events;
  }

  StatusOr<std::vector<v1::SequencedLogLine>> LogLinesAfter(const std::string& job_id,
                                                            int64_t after_sequence,
                                                            int limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    GEOTRAIN_ASSIGN_OR_RETURN(
        SqliteStatement query,
        db_->Prepare("SELECT sequence, record FROM job_log_lines WHERE job_id = ?1 AND "
                     "sequence > ?2 ORDER BY sequence LIMIT ?3"));
    query.BindText(1, job_id);
    query.BindInt64(2, after_sequence);
    query.BindInt64(3, limit);
    std::vector<v1::SequencedLogLine> lines;
    while (true) {
      GEOTRAIN_ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) break;
      v1::SequencedLogLine line;
      line.set_sequence(query.ColumnInt64(0));
      GEOTRAIN_RETURN_IF_ERROR(
          ParseRecord(query.ColumnBlob(1), Where("job_log_lines row"), line.mutable_line()));
      lines.push_back(std::move(line));
    }
    return lines;
  }

  StatusOr<std::vector<v1::JobStep>> StepsAfter(const std::string& job_id,
                                                int64_t after_step) override {
    std::lock_guard<std::mutex> lock(mu_);
    GEOTRAIN_ASSIGN_OR_RETURN(
        SqliteStatement query,
        db_->Prepare("SELECT record FROM job_steps WHERE job_id = ?1 AND step > ?2 "
                     "ORDER BY step"));
    query.BindText(1, job_id);
    query.BindInt64(2, after_step);
    std::vector<v1::JobStep> steps;
    while (true) {
      GEOTRAIN_ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) break;
      v1::JobStep step;
      GEOTRAIN_RETURN_IF_ERROR(ParseRecord(query.ColumnBlob(0), Where("job_steps row"), &step));
      steps.push_back(std::move(step));
    }
    return steps;
  }

 private:
  std::string Where(const std::string& what) const { return db_->path() + ": " + what; }

  StatusOr<uint64_t> NextNumber(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    SqliteTransaction transaction(db_.get());
    GEOTRAIN_RETURN_IF_ERROR(transaction.status());
    GEOTRAIN_ASSIGN_OR_RETURN(SqliteStatement read,
                              db_->Prepare("SELECT value FROM geotrain_meta WHERE key = ?1"));
    read.BindText(1, key);
    GEOTRAIN_ASSIGN_OR_RETURN(bool row, read.Step());
    uint64_t number = 1;
    if (row) {
      try {
        number = std::stoull(read.ColumnText(0));
      } catch (const std::exception&) {
        return DataLoss(
            Where("geotrain_meta." + key + ": \"" + read.ColumnText(0) + "\" is not a number"));
      }
    }
    GEOTRAIN_ASSIGN_OR_RETURN(
        SqliteStatement write,
        db_->Prepare("INSERT OR REPLACE INTO geotrain_meta (key, value) VALUES (?1, ?2)"));
    write.BindText(1, key);
    write.BindText(2, std::to_string(number + 1));
    GEOTRAIN_RETURN_IF_ERROR(write.Run());
    GEOTRAIN_RETURN_IF_ERROR(transaction.Commit());
    return number;
  }

  Status LastSequences(const std::string& table, std::map<std::string, int64_t>* out) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        SqliteStatement query,
        db_->Prepare("SELECT job_id, MAX(sequence) FROM " + table + " GROUP BY job_id"));
    while (true) {
      GEOTRAIN_ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) return OkStatus();
      (*out)[query.ColumnText(0)] = query.ColumnInt64(1);
    }
  }

  std::mutex mu_;
  std::unique_ptr<SqliteDb> db_;
  int lock_fd_;
};

// Refuses files that are not ours (or not SQLite at all) and schemas from the future; creates
// the schema in an empty database.
Status PrepareSchema(SqliteDb* db) {
  const std::string not_ours = db->path() + ": not a geotrain coordinator database";
  // SQLite's own words end the message ("...: file is not a database").
  auto unreadable = [&](const Status& status) {
    const std::string& message = status.message();
    const size_t colon = message.rfind(": ");
    return DataLoss(not_ours + " (" +
                    (colon == std::string::npos ? message : message.substr(colon + 2)) + ")");
  };
  std::vector<std::string> tables;
  {
    auto query = db->Prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    if (!query.ok()) return unreadable(query.status());
    while (true) {
      StatusOr<bool> row = query->Step();
      if (!row.ok()) return unreadable(row.status());
      if (!*row) break;
      tables.push_back(query->ColumnText(0));
    }
  }
  GEOTRAIN_RETURN_IF_ERROR(db->Exec("PRAGMA journal_mode=WAL"));
  GEOTRAIN_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=NORMAL"));
  if (tables.empty()) {
    SqliteTransaction transaction(db);
    GEOTRAIN_RETURN_IF_ERROR(transaction.status());
    GEOTRAIN_RETURN_IF_ERROR(db->Exec(kCreateSchema));
    GEOTRAIN_RETURN_IF_ERROR(db->Exec(kCreateLinks));
    GEOTRAIN_RETURN_IF_ERROR(db->Exec(kCreateJobKeys));
    return transaction.Commit();
  }
  if (std::find(tables.begin(), tables.end(), "geotrain_meta") == tables.end()) {
    std::string names;
    for (const std::string& t : tables) names += (names.empty() ? "" : ", ") + t;
    return DataLoss(not_ours + " (it has no geotrain_meta table; its tables: " + names + ")");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(SqliteStatement read,
                            db->Prepare("SELECT key, value FROM geotrain_meta WHERE key IN "
                                        "('format', 'schema_version')"));
  std::string format;
  std::string version;
  while (true) {
    GEOTRAIN_ASSIGN_OR_RETURN(bool row, read.Step());
    if (!row) break;
    (read.ColumnText(0) == "format" ? format : version) = read.ColumnText(1);
  }
  if (format != kFormat) {
    return DataLoss(not_ours + " (geotrain_meta.format is \"" + format + "\", expected \"" +
                    kFormat + "\")");
  }
  int schema = 0;
  try {
    schema = std::stoi(version);
  } catch (const std::exception&) {
    return DataLoss(db->path() + ": geotrain_meta.schema_version \"" + version +
                    "\" is not a number");
  }
  if (schema > kSchemaVersion) {
    return FailedPrecondition(db->path() + ": schema version " + std::to_string(schema) +
                              " is newer than this geotrain-coordinator understands (" +
                              std::to_string(kSchemaVersion) +
                              "); run a newer geotrain-coordinator");
  }
  if (schema < 1) {
    return DataLoss(db->path() + ": geotrain_meta.schema_version " + std::to_string(schema) +
                    " is not a valid version");
  }
  GEOTRAIN_RETURN_IF_ERROR(db->Exec(kCreateLinks));
  return db->Exec(kCreateJobKeys);
}

}  // namespace

StatusOr<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& state_dir) {
  if (state_dir.empty()) return InvalidArgument("state dir: empty");
  std::error_code error;
  std::filesystem::create_directories(state_dir, error);
  if (error)
    return Unavailable(state_dir + ": cannot create the state directory: " + error.message());
  if (!std::filesystem::is_directory(state_dir, error)) {
    return Unavailable(state_dir + ": not a directory");
  }
  // coordinator.db holds every job's frame key: the directory is the owner's alone, which covers
  // the database and its -wal/-shm files whatever the umask made them.
  std::filesystem::permissions(state_dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace, error);
  if (error) {
    return Unavailable(state_dir +
                       ": cannot make the state directory private (mode 0700): " + error.message());
  }

  const std::string lock_path = state_dir + "/coordinator.lock";
  const int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) return Unavailable(lock_path + ": cannot open: " + std::strerror(errno));
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int saved = errno;
    close(lock_fd);
    if (saved == EWOULDBLOCK) {
      return FailedPrecondition(state_dir +
                                ": another geotrain-coordinator is using this state directory "
                                "(coordinator.lock is held)");
    }
    return Unavailable(lock_path + ": cannot lock: " + std::strerror(saved));
  }

  StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(state_dir + "/coordinator.db");
  Status status = db.ok() ? PrepareSchema(db->get()) : db.status();
  if (!status.ok()) {
    if (db.ok()) db->reset();
    close(lock_fd);
    return status;
  }
  return std::unique_ptr<StateStore>(new SqliteStateStore(std::move(*db), lock_fd));
}

}  // namespace geotrain::coordinator
