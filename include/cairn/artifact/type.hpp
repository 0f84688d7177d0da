// cairn — ArtifactType: what kind of thing an artifact is, as a validated lowercase token.
//
// The categories of both source designs have named constants (ArtifactType::document, ArtifactType::file, ...).
// Hosts may use their own tokens too ("transcript", "embedding"), so the set is open; only malformed tokens are
// rejected.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// A lowercase token matching `[a-z][a-z0-9_-]{0,63}`. Regular value type; thread-safe like std::string.
///
///     ArtifactType t{"transcript"};        // a host's own category
///     ArtifactType::document == "document" // true
class ArtifactType {
 public:
  static constexpr std::size_t max_length = 64;

  /// Throws cairn::invalid_artifact naming the token when it is malformed.
  explicit ArtifactType(std::string token) : token_(std::move(token)) {
    if (!is_valid(token_)) {
      throw invalid_artifact(fmt::format(
          "type: '{}' is not a valid artifact type (expected a lowercase token matching [a-z][a-z0-9_-]{{0,63}})",
          detail::excerpt(token_)));
    }
  }

  static bool is_valid(std::string_view token) noexcept {
    if (token.empty() || token.size() > max_length || !detail::is_ascii_lower(token[0])) return false;
    for (char c : token) {
      if (!detail::is_ascii_lower(c) && !detail::is_ascii_digit(c) && c != '_' && c != '-') return false;
    }
    return true;
  }

  const std::string& str() const noexcept { return token_; }

  friend bool operator==(const ArtifactType& a, const ArtifactType& b) noexcept { return a.token_ == b.token_; }
  friend bool operator!=(const ArtifactType& a, const ArtifactType& b) noexcept { return !(a == b); }
  friend bool operator==(const ArtifactType& a, std::string_view b) noexcept { return a.token_ == b; }
  friend bool operator!=(const ArtifactType& a, std::string_view b) noexcept { return !(a == b); }
  friend bool operator<(const ArtifactType& a, const ArtifactType& b) noexcept { return a.token_ < b.token_; }
  friend std::ostream& operator<<(std::ostream& os, const ArtifactType& t) { return os << t.token_; }

  // Categories of the artifact-store design (seed 004).
  static const ArtifactType document;
  static const ArtifactType dataset;
  static const ArtifactType code;
  static const ArtifactType image;
  static const ArtifactType structured;
  // Categories of the execution-context design (seed 000).
  static const ArtifactType file;
  static const ArtifactType data;
  static const ArtifactType process;
  static const ArtifactType config;

 private:
  std::string token_;
};

inline const ArtifactType ArtifactType::document{"document"};
inline const ArtifactType ArtifactType::dataset{"dataset"};
inline const ArtifactType ArtifactType::code{"code"};
inline const ArtifactType ArtifactType::image{"image"};
inline const ArtifactType ArtifactType::structured{"structured"};
inline const ArtifactType ArtifactType::file{"file"};
inline const ArtifactType ArtifactType::data{"data"};
inline const ArtifactType ArtifactType::process{"process"};
inline const ArtifactType ArtifactType::config{"config"};

inline void to_json(nlohmann::json& j, const ArtifactType& t) { j = t.str(); }

CAIRN_END_NAMESPACE

namespace nlohmann {
template <>
struct adl_serializer<cairn::ArtifactType> {
  static cairn::ArtifactType from_json(const json& j) {
    if (!j.is_string()) {
      throw cairn::invalid_artifact(fmt::format("type: expected a string, got {}", j.type_name()));
    }
    return cairn::ArtifactType{j.get<std::string>()};
  }
  static void to_json(json& j, const cairn::ArtifactType& t) { j = t.str(); }
};
}  // namespace nlohmann

template <>
struct std::hash<cairn::ArtifactType> {
  std::size_t operator()(const cairn::ArtifactType& t) const noexcept { return std::hash<std::string>{}(t.str()); }
};

template <>
struct fmt::formatter<cairn::ArtifactType> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const cairn::ArtifactType& t, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(t.str(), ctx);
  }
};
