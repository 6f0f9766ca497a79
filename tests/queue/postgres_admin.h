// Test helpers for the queue's PostgreSQL cases (tests/unit/queue_test.cc, tests/queue/
// reliability_test.cc): a maintenance statement, and a URL naming another database.
#pragma once
#include <string>

#ifdef KBV_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

namespace kbv::queue::test {

// Runs one statement on a maintenance connection; "" or the error.
inline std::string pg_admin(const std::string& url, const std::string& sql) {
#ifdef KBV_HAVE_LIBPQ
  PGconn* conn = PQconnectdb(url.c_str());
  std::string error;
  if (PQstatus(conn) != CONNECTION_OK) {
    error = PQerrorMessage(conn);
  } else {
    PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
    PGresult* res = PQexec(conn, sql.c_str());
    if (PQresultStatus(res) != PGRES_COMMAND_OK) error = PQresultErrorMessage(res);
    PQclear(res);
  }
  PQfinish(conn);
  return error;
#else
  (void)url;
  (void)sql;
  return "built without libpq";
#endif
}

// postgresql://user@host:port/db?params -> the same with another database name (params kept).
inline std::string with_database(const std::string& url, const std::string& db) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  const size_t query = url.find('?', slash == std::string::npos ? 0 : slash);
  std::string base = slash == std::string::npos ? url : url.substr(0, slash);
  std::string rest = query == std::string::npos ? "" : url.substr(query);
  return base + "/" + db + rest;
}

}  // namespace kbv::queue::test
