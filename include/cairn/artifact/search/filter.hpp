// cairn::detail — search's checks and filters: a query checked before it runs (what is wrong and where), and a
// filter (type, MIME type, creator, creation time, id prefix, metadata conditions) matched against a record, or
// against the fields a SQL store keeps beside a vector (FilterFields).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/search.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

// ---- filters

inline bool json_pointer_valid(const std::string& pointer) {
  if (pointer.empty()) return true;
  if (pointer[0] != '/') return false;
  for (std::size_t i = 0; i < pointer.size(); ++i) {
    if (pointer[i] == '~' && (i + 1 >= pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1'))) {
      return false;
    }
  }
  return true;
}

/// The first reference token of `pointer` that reads as an array index (digits, no leading zero) past
/// SearchQuery::max_array_index, or nothing. nlohmann's pointers throw out_of_range on such a token when they meet
/// an array, so a query names it before any record is read.
inline std::optional<std::string_view> array_index_too_big(std::string_view pointer) {
  std::size_t at = 0;
  while (at < pointer.size()) {
    const std::size_t start = at + 1;
    std::size_t end = pointer.find('/', start);
    if (end == std::string_view::npos) end = pointer.size();
    const std::string_view token = pointer.substr(start, end - start);
    at = end;
    if (token.empty() || token.size() < 19 || token[0] == '0' ||
        token.find_first_not_of("0123456789") != std::string_view::npos) {
      continue;  // 18 digits or fewer are below 2^63: not too big
    }
    constexpr std::string_view max_index = "9223372036854775807";  // 2^63 - 1
    if (token.size() > max_index.size() || (token.size() == max_index.size() && token > max_index)) return token;
  }
  return std::nullopt;
}

inline std::string_view field_op_name(FieldOp op) noexcept {
  switch (op) {
    case FieldOp::eq: return "eq";
    case FieldOp::ne: return "ne";
    case FieldOp::lt: return "lt";
    case FieldOp::le: return "le";
    case FieldOp::gt: return "gt";
    case FieldOp::ge: return "ge";
    case FieldOp::in: return "in";
    case FieldOp::exists: return "exists";
  }
  return "eq";
}

/// Checks a vector given with a query ("search") or a record ("store_embedded"): a model name, 1 to
/// SearchQuery::max_dimension elements, every one finite, not all zero; with `embedder` (a store's), also its model
/// and dimension. Throws cairn::invalid_argument beginning with `what`, naming the first bad element
/// ("store_embedded: vector[2] is not a finite number") or both models. Every backend checks with this, so the
/// messages are the same everywhere.
inline void check_vector(std::string_view what, const Embedding& e, const Embedder* embedder = nullptr) {
  const auto& v = e.values;
  if (e.model.empty()) throw invalid_argument(fmt::format("{}: vector.model must not be empty", what));
  if (v.empty() || v.size() > SearchQuery::max_dimension) {
    throw invalid_argument(
        fmt::format("{}: vector has {} dimensions; 1 to {} are allowed", what, v.size(), SearchQuery::max_dimension));
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) throw invalid_argument(fmt::format("{}: vector[{}] is not a finite number", what, i));
  }
  bool zero = true;
  for (float x : v) zero = zero && x == 0.0f;
  if (zero) throw invalid_argument(fmt::format("{}: vector is all zeros (it has no direction to compare)", what));
  if (embedder) {
    const std::string model = embedder->model();
    const std::size_t dimension = embedder->dimension();
    if (e.model != model || v.size() != dimension) {
      throw invalid_argument(fmt::format(
          "{}: a vector of model '{}' with {} dimensions, but this store embeds with model '{}' ({} dimensions): "
          "vectors of different models never mix",
          what, excerpt(e.model, 80), v.size(), excerpt(model, 80), dimension));
    }
  }
}

/// Throws cairn::invalid_argument / limit_exceeded naming what is wrong with `q` and where; nothing else checks it.
inline void check_search_query(const SearchQuery& q) {
  if (q.limit == 0 || q.limit > SearchQuery::max_limit) {
    throw invalid_argument(
        fmt::format("search: limit must be between 1 and {} (got {})", SearchQuery::max_limit, q.limit));
  }
  if (q.ef > SearchQuery::max_ef) {
    throw limit_exceeded(fmt::format("search: ef must be at most {} (got {})", SearchQuery::max_ef, q.ef));
  }
  if (q.ef > 0 && q.exact) throw invalid_argument("search: ef (approximate) and exact exclude each other");
  const auto& f = q.filter;
  if (f.metadata.size() > SearchQuery::max_conditions) {
    throw limit_exceeded(fmt::format("search: filter.metadata has {} conditions, more than the limit of {}",
                                     f.metadata.size(), SearchQuery::max_conditions));
  }
  for (std::size_t i = 0; i < f.metadata.size(); ++i) {
    const auto& c = f.metadata[i];
    const auto where = [&] { return fmt::format("search: filter.metadata[{}] ('{}')", i, excerpt(c.pointer, 80)); };
    if (!json_pointer_valid(c.pointer)) throw invalid_argument(where() + ": not a JSON pointer (RFC 6901)");
    if (const auto token = array_index_too_big(c.pointer)) {
      throw invalid_argument(where() + fmt::format(": array index '{}' is past the largest, {}", excerpt(*token, 40),
                                                   SearchQuery::max_array_index));
    }
    if (static_cast<std::size_t>(std::count(c.pointer.begin(), c.pointer.end(), '/')) >
        SearchQuery::max_pointer_steps) {
      throw limit_exceeded(where() + fmt::format(": more than {} steps", SearchQuery::max_pointer_steps));
    }
    switch (c.op) {
      case FieldOp::exists: break;
      case FieldOp::eq:
      case FieldOp::ne:
        if (c.value.is_structured()) {
          throw invalid_argument(where() + ": eq/ne compare with a scalar, not an array or object");
        }
        break;
      case FieldOp::lt:
      case FieldOp::le:
      case FieldOp::gt:
      case FieldOp::ge:
        if (!c.value.is_number() && !c.value.is_string()) {
          throw invalid_argument(where() + fmt::format(": {} compares with a number or a string, got {}",
                                                       field_op_name(c.op), c.value.type_name()));
        }
        if (c.value.is_number_float() && std::isnan(c.value.get<double>())) {
          throw invalid_argument(where() + ": compares with NaN");
        }
        break;
      case FieldOp::in:
        if (!c.value.is_array() || c.value.empty()) {
          throw invalid_argument(where() + ": in takes a non-empty array of values");
        }
        if (c.value.size() > SearchQuery::max_in_values) {
          throw limit_exceeded(where() + fmt::format(": in lists {} values, more than the limit of {}", c.value.size(),
                                                     SearchQuery::max_in_values));
        }
        for (const auto& v : c.value) {
          if (v.is_structured()) throw invalid_argument(where() + ": in takes scalar values only");
        }
        break;
    }
  }
  if (f.created_after && f.created_before && *f.created_after >= *f.created_before) {
    throw invalid_argument("search: filter.created_after must be before filter.created_before");
  }
  if (q.vector) check_vector("search", *q.vector);
  const bool has_text = !q.text.empty();
  if (q.mode == SearchMode::text && !has_text) throw invalid_argument("search: mode text needs query text");
  if (!has_text && !q.vector && f.metadata.empty() && !f.type && !f.mime_type && !f.created_by && f.id_prefix.empty() &&
      !f.created_after && !f.created_before) {
    throw invalid_argument("search: nothing to search by (no text, no vector, no filter)");
  }
}

// Orders scalars of one kind; nullopt when the two cannot be compared (different kinds).
inline std::optional<int> compare_scalars(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_float() || b.is_number_float()) {
      const double x = a.get<double>(), y = b.get<double>();
      if (std::isnan(x) || std::isnan(y)) return std::nullopt;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_number_unsigned() && b.is_number_unsigned()) {
      const auto x = a.get<std::uint64_t>(), y = b.get<std::uint64_t>();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    // At least one signed integer: compare through the signs first, so that uint64 above int64's range orders right.
    const auto as_wide = [](const nlohmann::json& j) -> std::pair<bool, std::uint64_t> {
      if (j.is_number_unsigned()) return {false, j.get<std::uint64_t>()};
      const auto v = j.get<std::int64_t>();
      return v < 0 ? std::pair<bool, std::uint64_t>{true, 0 - static_cast<std::uint64_t>(v)}
                   : std::pair<bool, std::uint64_t>{false, static_cast<std::uint64_t>(v)};
    };
    const auto [xn, xm] = as_wide(a);
    const auto [yn, ym] = as_wide(b);
    if (xn != yn) return xn ? -1 : 1;
    if (xm == ym) return 0;
    return (xm < ym) != xn ? -1 : 1;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.type() == b.type() && (a.is_boolean() || a.is_null())) return a == b ? 0 : std::optional<int>(std::nullopt);
  return std::nullopt;
}

/// The member of `doc` that `pointer` (a valid RFC 6901 pointer, json_pointer_valid) names, or null where there is
/// none: what nlohmann's `contains` and `at` find, walked once and without allocating (a token is unescaped into a
/// string only when it holds '~'). Array steps take decimal indexes without leading zeros; "-" names nothing.
inline const nlohmann::json* pointee(const nlohmann::json& doc, std::string_view pointer) {
  const nlohmann::json* at = &doc;
  std::size_t start = 1;
  while (start <= pointer.size() && !pointer.empty()) {
    std::size_t end = pointer.find('/', start);
    if (end == std::string_view::npos) end = pointer.size();
    std::string_view token = pointer.substr(start, end - start);
    std::string unescaped;
    if (token.find('~') != std::string_view::npos) {
      for (std::size_t i = 0; i < token.size(); ++i) {
        if (token[i] == '~' && i + 1 < token.size()) {
          unescaped.push_back(token[i + 1] == '1' ? '/' : '~');
          ++i;
        } else {
          unescaped.push_back(token[i]);
        }
      }
      token = unescaped;
    }
    if (at->is_object()) {
      const auto& object = at->get_ref<const nlohmann::json::object_t&>();
      const auto it = object.find(token);  // nlohmann 3.11's object_t compares transparently (std::less<>)
      if (it == object.end()) return nullptr;
      at = &it->second;
    } else if (at->is_array()) {
      if (token.empty() || token.size() > 19 || (token.size() > 1 && token[0] == '0')) return nullptr;
      std::uint64_t index = 0;
      for (const char ch : token) {
        if (ch < '0' || ch > '9') return nullptr;
        index = index * 10 + static_cast<std::uint64_t>(ch - '0');
      }
      if (index >= at->size()) return nullptr;
      at = &(*at)[static_cast<std::size_t>(index)];
    } else {
      return nullptr;
    }
    start = end + 1;
  }
  return at;
}

inline bool condition_holds(const nlohmann::json& metadata, const FieldCondition& c) {
  const nlohmann::json* field = nullptr;
  if (metadata.is_object() || metadata.is_array()) field = pointee(metadata, c.pointer);
  if (c.op == FieldOp::exists) return field != nullptr;
  if (c.op == FieldOp::ne) {
    if (!field) return true;
    const auto cmp = compare_scalars(*field, c.value);
    return !cmp || *cmp != 0;
  }
  if (!field || field->is_structured()) return false;
  if (c.op == FieldOp::in) {
    for (const auto& v : c.value) {
      const auto cmp = compare_scalars(*field, v);
      if (cmp && *cmp == 0) return true;
    }
    return false;
  }
  const auto cmp = compare_scalars(*field, c.value);
  if (!cmp) return false;
  switch (c.op) {
    case FieldOp::eq: return *cmp == 0;
    case FieldOp::lt: return *cmp < 0;
    case FieldOp::le: return *cmp <= 0;
    case FieldOp::gt: return *cmp > 0;
    case FieldOp::ge: return *cmp >= 0;
    default: return false;
  }
}

/// True when `r` passes every condition of `f`.
inline bool matches_filter(const ArtifactRecord& r, const SearchFilter& f) {
  if (f.type && r.type() != *f.type) return false;
  if (f.mime_type && r.mime_type() != *f.mime_type) return false;
  if (f.created_by && r.created_by() != *f.created_by) return false;
  if (!f.id_prefix.empty() && r.id().compare(0, f.id_prefix.size(), f.id_prefix) != 0) return false;
  if (f.created_after && r.created_at() < *f.created_after) return false;
  if (f.created_before && r.created_at() >= *f.created_before) return false;
  for (const auto& c : f.metadata) {
    if (!condition_holds(r.metadata(), c)) return false;
  }
  return true;
}

/// What a filter reads of a version besides its id: what a SQL store's vector index keeps beside each vector
/// (detail::VectorChange::fields), so that its similarity search checks a filter in memory and reads the rows of
/// the page only. Records are immutable, so a version's fields never change while it is indexed.
struct FilterFields {
  /// Metadata whose JSON text is longer than this is not kept (`metadata` null): the row decides for that version.
  static constexpr std::size_t max_kept_metadata_bytes = 2048;
  std::string type;
  std::optional<std::string> mime_type;
  std::optional<std::string> created_by;
  std::int64_t created_at = 0;
  std::shared_ptr<const nlohmann::json> metadata;  ///< null: not kept
  /// The change that added the version to the index (its sequence number; in an index made from the current
  /// vectors, the last change then): it names this life of the version, since a version removed and stored again
  /// is added by a later change (a SQL store keeps decoded records under it).
  std::uint64_t seq = 0;
};

/// matches_filter() for a version of `id` whose fields were kept with their metadata (f.metadata non-null).
inline bool matches_filter(const std::string& id, const FilterFields& r, const SearchFilter& f) {
  if (f.type && f.type->str() != r.type) return false;
  if (f.mime_type && r.mime_type != f.mime_type) return false;
  if (f.created_by && r.created_by != f.created_by) return false;
  if (!f.id_prefix.empty() && id.compare(0, f.id_prefix.size(), f.id_prefix) != 0) return false;
  if (f.created_after && r.created_at < *f.created_after) return false;
  if (f.created_before && r.created_at >= *f.created_before) return false;
  for (const auto& c : f.metadata) {
    if (!condition_holds(*r.metadata, c)) return false;
  }
  return true;
}

}  // namespace detail
CAIRN_END_NAMESPACE
