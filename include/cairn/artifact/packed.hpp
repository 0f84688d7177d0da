// cairn::detail — a record's packed form: what InMemoryArtifactStore keeps at rest for a record whose parsed value
// it does not hold (InMemoryStoreOptions::max_parsed_bytes).
//
// A parsed nlohmann::json keeps about ten times the bytes of its compact text (a 1 KB document of 16 small rows:
// 11 KB of map nodes and strings). Packed, the record is one string: four bytes giving the length of the header,
// the header (a CBOR array of every field but the value), then the value as CBOR (absent when the record has
// none). CBOR rather than JSON text: a quarter smaller, as fast to decode with nlohmann, and exact for every value a
// record can hold (binary values included). Decoding skips the content checks of the value and metadata: they were
// checked when the record was first built, and the bytes never leave the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

class RecordPacker {
 public:
  /// The packed form of `r` (see the top of the file). Throws only what allocating throws.
  static std::string pack(const ArtifactRecord& r) {
    using json = nlohmann::json;
    auto optional = [](const auto& v) { return v ? json(*v) : json(); };
    const json header =
        json::array({r.id(), r.tenant_id(), r.version(), r.type().str(), r.title(), r.description(),
                     r.purpose() == r.description() ? json() : json(r.purpose()), r.created_at(),
                     r.metadata().empty() ? json() : r.metadata(), optional(r.storage_url()), optional(r.mime_type()),
                     optional(r.size_bytes()), optional(r.schema_url()), optional(r.created_by())});
    std::string out(4, '\0');
    json::to_cbor(header, out);
    const auto header_size = static_cast<std::uint32_t>(out.size() - 4);
    for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header_size >> (8 * i)) & 0xffu);
    if (r.has_value()) json::to_cbor(r.value(), out);
    out.shrink_to_fit();
    return out;
  }

  /// The record `packed` holds: equal (operator==) to the one packed. A non-negative integer the value held as a
  /// signed number comes back unsigned, as from every backend that keeps text (the JSON is the same). Throws
  /// cairn::storage_error for bytes that are not a packed record (never written by pack: a bug).
  static ArtifactPtr unpack(std::string_view packed) {
    using json = nlohmann::json;
    try {
      if (packed.size() < 4) throw storage_error("packed record: shorter than its header length");
      std::uint32_t header_size = 0;
      for (int i = 0; i < 4; ++i) {
        header_size |= static_cast<std::uint32_t>(static_cast<unsigned char>(packed[static_cast<std::size_t>(i)]))
                       << (8 * i);
      }
      if (header_size > packed.size() - 4) throw storage_error("packed record: header longer than the record");
      const char* begin = packed.data() + 4;
      json header = json::from_cbor(begin, begin + header_size, true, true, json::cbor_tag_handler_t::store);
      if (!header.is_array() || header.size() != 14) throw storage_error("packed record: malformed header");
      auto text = [&header](std::size_t i) -> std::string { return std::move(header[i].get_ref<std::string&>()); };
      auto optional_text = [&header, &text](std::size_t i) -> std::optional<std::string> {
        if (header[i].is_null()) return std::nullopt;
        return text(i);
      };
      ArtifactRecord::Builder b;
      b.id_ = text(0);
      b.tenant_id_ = text(1);
      b.version_ = header[2].get<std::uint64_t>();
      b.type_ = ArtifactType{text(3)};
      b.title_ = text(4);
      b.description_ = text(5);
      b.purpose_ = optional_text(6);
      b.created_at_ = header[7].get<std::int64_t>();
      if (!header[8].is_null()) b.metadata_ = std::make_shared<const json>(std::move(header[8]));
      b.storage_url_ = optional_text(9);
      b.mime_type_ = optional_text(10);
      if (!header[11].is_null()) b.size_bytes_ = header[11].get<std::uint64_t>();
      b.schema_url_ = optional_text(12);
      b.created_by_ = optional_text(13);
      const char* value = begin + header_size;
      if (value != packed.data() + packed.size()) {
        // `store`: a binary value's subtype is written as a CBOR tag and read back into the value.
        b.value_ = std::make_shared<const json>(
            json::from_cbor(value, packed.data() + packed.size(), true, true, json::cbor_tag_handler_t::store));
      }
      b.value_checked_ = true;
      b.metadata_checked_ = true;
      return std::move(b).build();
    } catch (const storage_error&) {
      throw;
    } catch (const error& e) {
      throw storage_error(fmt::format("packed record: does not make a record: {}", e.what()));
    } catch (const nlohmann::json::exception& e) {
      throw storage_error(fmt::format("packed record: unreadable: {}", e.what()));
    }
  }

  /// Sets `b`'s value and metadata to what nlohmann's parser made of a backend's JSON columns, without the walk
  /// build() would make over them again: the parser already refused invalid UTF-8 in strings and keys and numbers
  /// out of range, which is all that walk checks (check_json_content). SQLite and PostgreSQL fetches decode each
  /// column once.
  static void set_parsed(ArtifactRecord::Builder& b, std::optional<nlohmann::json> value, nlohmann::json metadata) {
    if (value) b.value_ = std::make_shared<const nlohmann::json>(std::move(*value));
    b.value_checked_ = true;
    if (!metadata.is_object() || !metadata.empty()) {  // the common empty object stays the shared one
      b.metadata_ = std::make_shared<const nlohmann::json>(std::move(metadata));
    }
    b.metadata_checked_ = true;
  }
};

/// What a parsed value keeps in the heap, estimated from its shape for libstdc++ and glibc's malloc on a 64-bit
/// machine (a map node per object member, a heap string per string longer than 15 bytes, malloc's 16-byte
/// granules): within a few per cent of what mallinfo measures for documents of small rows. The root's own 16 bytes
/// and its shared_ptr block are counted too.
inline std::size_t json_heap_estimate(const nlohmann::json& value) {
  using json = nlohmann::json;
  auto chunk = [](std::size_t n) -> std::size_t {
    const std::size_t c = (n + 8 + 15) & ~std::size_t{15};
    return c < 32 ? 32 : c;
  };
  auto string_heap = [&chunk](const std::string& s) { return s.size() > 15 ? chunk(s.capacity() + 1) : 0; };
  std::size_t total = chunk(16 + sizeof(json));  // make_shared's block holding the root
  std::vector<const json*> todo{&value};
  while (!todo.empty()) {
    const json* node = todo.back();
    todo.pop_back();
    switch (node->type()) {
      case json::value_t::object: {
        const auto& obj = *node->get_ptr<const json::object_t*>();
        total += chunk(sizeof(json::object_t));
        for (const auto& [key, child] : obj) {
          total += chunk(32 + sizeof(std::pair<const std::string, json>)) + string_heap(key);
          todo.push_back(&child);
        }
        break;
      }
      case json::value_t::array: {
        const auto& arr = *node->get_ptr<const json::array_t*>();
        total += chunk(sizeof(json::array_t)) + (arr.capacity() == 0 ? 0 : chunk(arr.capacity() * sizeof(json)));
        for (const auto& child : arr) todo.push_back(&child);
        break;
      }
      case json::value_t::string:
        total += chunk(sizeof(std::string)) + string_heap(node->get_ref<const std::string&>());
        break;
      case json::value_t::binary: {
        const auto& bin = node->get_binary();
        total += chunk(sizeof(json::binary_t)) + (bin.capacity() == 0 ? 0 : chunk(bin.capacity()));
        break;
      }
      default: break;  // numbers, booleans and null live inside their parent
    }
  }
  return total;
}

}  // namespace detail
CAIRN_END_NAMESPACE
