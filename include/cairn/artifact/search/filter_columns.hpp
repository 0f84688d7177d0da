// cairn::detail — a similarity filter as bounds on numbers the vector index keeps per version (VectorIndex::Bound),
// so that a selective filter is checked over plain arrays before the scan, as a filtered float scan checks a plain
// int (docs/search.md, "Filters"). The columns: "type", "mime_type", "created_by" (a 53-bit hash of the string),
// "created_at" (the number), and per metadata pointer "n" + pointer (the member's number) and "s" + pointer (a hash
// of the member's string). Bounds are necessary conditions only: a hash may collide, and a number's conversion to a
// double may round, so every version that passes them is still checked by the filter itself.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/search.hpp"
#include "cairn/artifact/search/filter.hpp"
#include "cairn/artifact/search/vector_index.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// A string as a column's number: FNV-1a (64 bits) cut to 53, exact in a double.
inline double column_hash(std::string_view s) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<double>(h >> 11);
}

/// The bounds `f` implies (empty when it implies none the columns can check: ne, exists, string order, id prefix).
inline std::vector<VectorIndex::Bound> filter_bounds(const SearchFilter& f) {
  std::vector<VectorIndex::Bound> out;
  const auto exactly = [&out](std::string column, double v) { out.push_back({std::move(column), v, v}); };
  if (f.type) exactly("type", column_hash(f.type->str()));
  if (f.mime_type) exactly("mime_type", column_hash(*f.mime_type));
  if (f.created_by) exactly("created_by", column_hash(*f.created_by));
  // created_at >= after, < before: the doubles keep the order (conversion never reverses it).
  if (f.created_after || f.created_before) {
    VectorIndex::Bound b{"created_at"};
    if (f.created_after) b.low = static_cast<double>(*f.created_after);
    if (f.created_before) b.high = static_cast<double>(*f.created_before);
    out.push_back(std::move(b));
  }
  for (const FieldCondition& c : f.metadata) {
    const bool number = c.value.is_number() && !std::isnan(c.value.get<double>());
    if (c.op == FieldOp::eq && c.value.is_string()) {
      exactly("s" + c.pointer, column_hash(c.value.get_ref<const std::string&>()));
      continue;
    }
    if (c.op == FieldOp::in && c.value.is_array() && !c.value.empty()) {
      VectorIndex::Bound b{"n" + c.pointer, std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()};
      bool numbers = true;
      for (const auto& v : c.value) {
        numbers = numbers && v.is_number() && !std::isnan(v.get<double>());
        if (!numbers) break;
        b.low = std::min(b.low, v.get<double>());
        b.high = std::max(b.high, v.get<double>());
      }
      if (numbers) out.push_back(std::move(b));
      continue;
    }
    if (!number) continue;
    const double v = c.value.get<double>();
    // Typed comparisons (condition_holds): a number matches only a number, and x < v implies double(x) <= double(v).
    // Strictly less where v is below 2^53 in magnitude (exact, and every integer between it and 0 too): then
    // x < v implies double(x) < v, so `lt` and `gt` leave v itself out.
    constexpr double below_exact = 9007199254740992.0;  // 2^53
    const bool strict = (c.op == FieldOp::lt || c.op == FieldOp::gt) && std::fabs(v) < below_exact;
    const double inf = std::numeric_limits<double>::infinity();
    switch (c.op) {
      case FieldOp::eq: exactly("n" + c.pointer, v); break;
      case FieldOp::lt: out.push_back({"n" + c.pointer, -inf, strict ? std::nextafter(v, -inf) : v}); break;
      case FieldOp::le: out.push_back({"n" + c.pointer, -inf, v}); break;
      case FieldOp::gt: out.push_back({"n" + c.pointer, strict ? std::nextafter(v, inf) : v, inf}); break;
      case FieldOp::ge: out.push_back({"n" + c.pointer, v, inf}); break;
      default: break;
    }
  }
  return out;
}

/// A metadata column's value in `metadata` ("n" or "s" + pointer).
inline VectorIndex::ColumnValue metadata_column(const std::string& column, const nlohmann::json& metadata) {
  using Value = VectorIndex::ColumnValue;
  const nlohmann::json* field = nullptr;
  if (metadata.is_object() || metadata.is_array()) field = pointee(metadata, std::string_view(column).substr(1));
  if (!field) return Value{Value::none, 0};
  if (column[0] == 'n' && field->is_number()) {
    const double v = field->get<double>();
    return std::isnan(v) ? Value{Value::none, 0} : Value{Value::number, v};
  }
  if (column[0] == 's' && field->is_string()) {
    return Value{Value::number, column_hash(field->get_ref<const std::string&>())};
  }
  return Value{Value::none, 0};
}

/// A column's value of a record.
inline VectorIndex::ColumnValue filter_column(const std::string& column, const ArtifactRecord& r) {
  using Value = VectorIndex::ColumnValue;
  if (column == "type") return Value{Value::number, column_hash(r.type().str())};
  const auto text = [](const std::optional<std::string>& s) {
    return s ? Value{Value::number, column_hash(*s)} : Value{Value::none, 0};
  };
  if (column == "mime_type") return text(r.mime_type());
  if (column == "created_by") return text(r.created_by());
  if (column == "created_at") return Value{Value::number, static_cast<double>(r.created_at())};
  if (column.size() > 1 && (column[0] == 'n' || column[0] == 's')) return metadata_column(column, r.metadata());
  return Value{};  // unknown: passes
}

/// A column's value of the fields a SQL store keeps beside a vector; a metadata column of metadata not kept there
/// is unknown (the row decides).
inline VectorIndex::ColumnValue filter_column(const std::string& column, const FilterFields& f) {
  using Value = VectorIndex::ColumnValue;
  if (column == "type") return Value{Value::number, column_hash(f.type)};
  if (column == "mime_type") {
    return f.mime_type ? Value{Value::number, column_hash(*f.mime_type)} : Value{Value::none, 0};
  }
  if (column == "created_by") {
    return f.created_by ? Value{Value::number, column_hash(*f.created_by)} : Value{Value::none, 0};
  }
  if (column == "created_at") return Value{Value::number, static_cast<double>(f.created_at)};
  if (column.size() > 1 && (column[0] == 'n' || column[0] == 's') && f.metadata) {
    return metadata_column(column, *f.metadata);
  }
  return Value{};
}

/// The column reader of an index whose tags are the fields a SQL store keeps beside each vector (FilterFields, or
/// null: unknown).
inline VectorIndex::ColumnReader fields_column_reader() {
  return [](const std::string& column, const std::string&, std::uint64_t, const void* tag) {
    return tag ? filter_column(column, *static_cast<const FilterFields*>(tag)) : VectorIndex::ColumnValue{};
  };
}

}  // namespace detail
CAIRN_END_NAMESPACE
