// cairn — PostgresArtifactStore: the ArtifactStore for fleets of agents on many machines, in PostgreSQL.
//
// Part of the compiled target cairn::postgres (CMake option CAIRN_WITH_POSTGRES); not included by cairn/cairn.hpp.
// Values and metadata are `jsonb`; every statement names the tenant in its WHERE clause; a new version is assigned
// by one statement that bumps the id's head row and inserts the version under a unique (tenant_id, id, version)
// key, so concurrent writers on any number of machines never lose or duplicate a version. A small pool of
// connections serves the calling threads; a connection broken by a server restart is re-opened and the call
// retried once (a store is retried only after checking that the first attempt did not commit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cairn/artifact/store.hpp"
#include "cairn/clock.hpp"
#include "cairn/detail/json.hpp"

namespace cairn {

/// How a PostgresArtifactStore connects.
struct PostgresOptions {
  /// Most connections open at once (each serves one call at a time); callers beyond that wait for one.
  std::size_t pool_size = 4;
  /// How long a call keeps trying to reconnect after the connection broke (a server restart, a failover) before
  /// it fails with cairn::storage_error.
  int reconnect_timeout_ms = 15000;
  /// Values and metadata deeper or larger than this are refused by store() (cairn::limit_exceeded), so that
  /// everything stored can be read back under the same limits.
  JsonLimits json_limits{};
  /// Stamps created_at of records stored without one; null: the system clock.
  std::shared_ptr<Clock> clock{};
  /// Ids of records stored without one; null: random UUID v4. (The token that lets a retry after a lost
  /// connection find its own committed write always comes from the CSPRNG: it is never seen, and it must differ
  /// between processes that share a database, which a test's sequential ids would not.)
  std::shared_ptr<IdGenerator> ids{};
};

/// An ArtifactStore in a PostgreSQL database (9.5 or later). Thread-safe; any number of processes and machines may
/// share the database.
///
///     cairn::PostgresArtifactStore store("host=db.internal dbname=agents user=cairn");
///     store.store(*record);
///
/// The constructor connects once and creates or migrates the schema (tables cairn_schema, cairn_artifacts,
/// cairn_heads, function cairn_remove_artifact); it throws cairn::storage_error when the server cannot be reached
/// or its schema is newer than this cairn knows. Error messages never repeat the conninfo (it may hold a password).
class PostgresArtifactStore final : public ArtifactStore {
 public:
  /// The schema version this cairn writes; databases with a lower one are migrated when a store connects.
  static constexpr int schema_version = 1;

  /// `conninfo` is what libpq's PQconnectdb takes: "host=... port=... dbname=..." or a postgresql:// URI.
  explicit PostgresArtifactStore(std::string conninfo, PostgresOptions options = {});
  ~PostgresArtifactStore() override;
  PostgresArtifactStore(const PostgresArtifactStore&) = delete;
  PostgresArtifactStore& operator=(const PostgresArtifactStore&) = delete;

  using ArtifactStore::store;
  ArtifactPtr store(const ArtifactRecord& record) override;
  ArtifactPtr fetch(const std::string& id, const std::string& tenant_id,
                    std::uint64_t version = latest) const override;
  void remove(const std::string& id, const std::string& tenant_id) override;
  std::vector<std::uint64_t> versions(const std::string& id, const std::string& tenant_id) const override;
  ListPage list(const std::string& tenant_id, const ListQuery& query = {}) const override;

  /// How many times a broken connection was re-opened (for monitoring, and for tests of restarts).
  std::uint64_t reconnects() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn
