#include "coordinator/sqlite_db.h"

#include <sqlite3.h>

#include <utility>

namespace geotrain::coordinator {
namespace {

Status SqliteError(sqlite3* db, const std::string& path, int code, const std::string& what) {
  const char* message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  // Corruption and foreign files are data problems, not transient ones; a full disk is told by
  // its code, so that callers never search the text for it.
  const int primary = code & 0xff;
  const StatusCode status_code =
      (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) ? StatusCode::kDataLoss
      : (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)  ? StatusCode::kUnavailable
      : primary == SQLITE_FULL                                ? StatusCode::kResourceExhausted
                                                              : StatusCode::kInternal;
  return Status(status_code, path + ": " + what + ": " + message);
}

}  // namespace

SqliteStatement::SqliteStatement(sqlite3_stmt* statement, std::string path)
    : statement_(statement), path_(std::move(path)) {}

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : statement_(std::exchange(other.statement_, nullptr)), path_(std::move(other.path_)) {}

SqliteStatement::~SqliteStatement() {
  if (statement_ != nullptr) sqlite3_finalize(statement_);
}

void SqliteStatement::BindInt64(int index, int64_t value) {
  sqlite3_bind_int64(statement_, index, value);
}

void SqliteStatement::BindText(int index, const std::string& value) {
  sqlite3_bind_text(statement_, index, value.data(), static_cast<int>(value.size()),
                    SQLITE_TRANSIENT);
}

void SqliteStatement::BindBlob(int index, const std::string& value) {
  sqlite3_bind_blob(statement_, index, value.data(), static_cast<int>(value.size()),
                    SQLITE_TRANSIENT);
}

StatusOr<bool> SqliteStatement::Step() {
  const int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(sqlite3_db_handle(statement_), path_, rc,
                     std::string("executing \"") + sqlite3_sql(statement_) + "\"");
}

Status SqliteStatement::Run() {
  while (true) {
    GEOTRAIN_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return OkStatus();
  }
}

int64_t SqliteStatement::ColumnInt64(int index) const {
  return sqlite3_column_int64(statement_, index);
}

std::string SqliteStatement::ColumnText(int index) const {
  const unsigned char* text = sqlite3_column_text(statement_, index);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(statement_, index)));
}

std::string SqliteStatement::ColumnBlob(int index) const {
  const void* data = sqlite3_column_blob(statement_, index);
  if (data == nullptr) return {};
  return std::string(static_cast<const char*>(data),
                     static_cast<size_t>(sqlite3_column_bytes(statement_, index)));
}

StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status status = SqliteError(db, path, rc, "cannot open the database");
    sqlite3_close(db);
    return status;
  }
  sqlite3_extended_result_codes(db, 1);
  // Another process holding a write lock for a moment (e.g. the sqlite3 shell) is waited for.
  sqlite3_busy_timeout(db, 5000);
  return std::unique_ptr<SqliteDb>(new SqliteDb(db, path));
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

Status SqliteDb::Exec(const std::string& sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);
  if (rc != SQLITE_OK) return SqliteError(db_, path_, rc, "executing \"" + sql + "\"");
  return OkStatus();
}

StatusOr<SqliteStatement> SqliteDb::Prepare(const std::string& sql) {
  sqlite3_stmt* statement = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_, path_, rc, "preparing \"" + sql + "\"");
  return SqliteStatement(statement, path_);
}

SqliteTransaction::SqliteTransaction(SqliteDb* db)
    : db_(db), begin_status_(db->Exec("BEGIN IMMEDIATE")) {
  done_ = !begin_status_.ok();
}

SqliteTransaction::~SqliteTransaction() {
  if (!done_) (void)db_->Exec("ROLLBACK");
}

Status SqliteTransaction::Commit() {
  if (done_) return begin_status_.ok() ? Internal("transaction committed twice") : begin_status_;
  Status status = db_->Exec("COMMIT");
  if (status.ok()) done_ = true;
  return status;
}

}  // namespace geotrain::coordinator
