// SqliteDb, SqliteStatement, SqliteTransaction: the few pieces of the SQLite C API the state
// store uses, with errors as Status values naming the database file.
//
// Thread-compatible: the owner serialises calls (SqliteStateStore holds a mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace geotrain::coordinator {

class SqliteStatement {
 public:
  SqliteStatement(sqlite3_stmt* statement, std::string path);
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&&) = delete;
  SqliteStatement(const SqliteStatement&) = delete;
  ~SqliteStatement();

  // Parameters count from 1, as in SQL's "?1".
  void BindInt64(int index, int64_t value);
  void BindText(int index, const std::string& value);
  void BindBlob(int index, const std::string& value);

  // true: a row is ready; false: done.
  StatusOr<bool> Step();
  // Steps to the end (statements that return no rows).
  Status Run();

  int64_t ColumnInt64(int index) const;
  std::string ColumnText(int index) const;
  std::string ColumnBlob(int index) const;

 private:
  sqlite3_stmt* statement_;
  std::string path_;
};

class SqliteDb {
 public:
  // Opens (creating when missing) the database file.
  static StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  Status Exec(const std::string& sql);
  StatusOr<SqliteStatement> Prepare(const std::string& sql);
  const std::string& path() const { return path_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// BEGIN IMMEDIATE on construction; rolls back unless Commit() succeeded.
class SqliteTransaction {
 public:
  explicit SqliteTransaction(SqliteDb* db);
  ~SqliteTransaction();
  // The status of BEGIN.
  const Status& status() const { return begin_status_; }
  Status Commit();

 private:
  SqliteDb* db_;
  Status begin_status_;
  bool done_ = false;
};

}  // namespace geotrain::coordinator
