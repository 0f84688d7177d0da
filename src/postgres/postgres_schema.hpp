// cairn (private) — what the PostgresArtifactStore's code needs to know of its schema, which postgres_schema.cpp
// creates and migrates (PostgresArtifactStore::Impl::migrate).
#pragma once

#include <string_view>

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {
namespace pg {

// The unique index that makes a retried write happen at most once (migration 2).
inline constexpr std::string_view write_token_index = "cairn_artifacts_write_token";

}  // namespace pg
}  // namespace detail
CAIRN_END_NAMESPACE
