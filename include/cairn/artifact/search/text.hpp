// cairn::detail — the text search reads: the tokenizer every backend shares (SQLite FTS5's `ascii` tokenizer splits
// and folds the same way) and the searchable text of a record's value.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cairn/detail/text.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

// ---- the tokenizer: runs of ASCII letters and digits and of non-ASCII bytes (UTF-8 characters), ASCII folded to
// lowercase. SQLite FTS5's `ascii` tokenizer splits and folds the same way, so every backend finds the same words.

inline bool is_word_byte(unsigned char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

/// Calls `f(word)` for each word of `text`, lowercased, in order.
template <class F>
void for_each_word(std::string_view text, F&& f) {
  std::string word;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const unsigned char c = i < text.size() ? static_cast<unsigned char>(text[i]) : static_cast<unsigned char>(0);
    if (i < text.size() && is_word_byte(c)) {
      word.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c));
    } else if (!word.empty()) {
      f(word);
      word.clear();
    }
  }
}

inline std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> out;
  for_each_word(text, [&out](const std::string& w) { out.push_back(w); });
  return out;
}

/// The most of a record's value that search reads as text (value_text).
inline constexpr std::size_t max_value_text_bytes = 64 * 1024;

/// The searchable text of a record's value: a string whole; for JSON, every string leaf and member name, in
/// document order (an object's members in key order, as nlohmann::json keeps them), separated by newlines; at most
/// `max_bytes` (cut at a UTF-8 character boundary).
inline std::string value_text(const nlohmann::json& value, std::size_t max_bytes = max_value_text_bytes) {
  std::string out;
  struct Item {
    const nlohmann::json* node;  // a value to walk, or null for a member name
    std::string_view name;
  };
  std::vector<Item> todo{{&value, {}}};
  const auto add = [&out, max_bytes](std::string_view s) {
    if (!out.empty()) out.push_back('\n');
    out.append(s.substr(0, max_bytes - std::min(out.size(), max_bytes)));
  };
  while (!todo.empty() && out.size() < max_bytes) {
    const Item item = todo.back();
    todo.pop_back();
    if (!item.node) {
      add(item.name);
    } else if (item.node->is_string()) {
      add(item.node->get_ref<const std::string&>());
    } else if (item.node->is_object()) {
      std::vector<Item> members;
      for (auto it = item.node->begin(); it != item.node->end(); ++it) {
        members.push_back({nullptr, it.key()});
        members.push_back({&it.value(), {}});
      }
      todo.insert(todo.end(), members.rbegin(), members.rend());
    } else if (item.node->is_array()) {
      for (auto it = item.node->rbegin(); it != item.node->rend(); ++it) todo.push_back({&*it, {}});
    }
  }
  out.resize(std::min(out.size(), max_bytes));
  out.resize(valid_utf8_prefix_length(out));
  return out;
}

/// A record's words by field, as the word index sees them.

}  // namespace detail
CAIRN_END_NAMESPACE
