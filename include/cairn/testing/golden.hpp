// cairn::testing — golden files in one call, and "everything a run did" as one canonical JSON document.
//
//     auto run = cairn::testing::RunDump().store(*store, "acme").calls(*store).context(ctx).engine(engine).json();
//     cairn::testing::check_golden(CAIRN_GOLDEN_DIR "/invoice_run.json", run);
//
// check_golden compares `actual` with the file; with the environment variable CAIRN_UPDATE_GOLDEN=1 it writes the
// file instead (then review `git diff` and commit it). A difference is reported through the test framework
// (cairn/testing/report.hpp) as a line diff with context, and for JSON also as the JSON Patch (RFC 6902) operations
// that turn the golden document into the actual one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/testing/recording_store.hpp"
#include "cairn/testing/report.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

namespace golden_detail {

inline std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

inline bool read_file(const std::string& path, std::string& out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char buffer[65536];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) out.append(buffer, n);
  std::fclose(f);
  return true;
}

inline bool write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace golden_detail

/// A unified line diff from `expected` to `actual` ("-" lines only in expected, "+" only in actual), `context`
/// unchanged lines around each change, at most `max_lines` lines of output; "" when the texts are equal. Lines are
/// matched by a longest common subsequence after the common head and tail are set aside (above 4,000,000 cells of
/// table it shows the whole middle as changed).
inline std::string line_diff(std::string_view expected, std::string_view actual, std::size_t context = 3,
                             std::size_t max_lines = 200) {
  if (expected == actual) return {};
  const auto a = golden_detail::split_lines(expected);
  const auto b = golden_detail::split_lines(actual);
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) ++tail;
  const std::size_t n = a.size() - head - tail;
  const std::size_t m = b.size() - head - tail;
  // ops: ' ' same, '-' from a, '+' from b; with the line index in a or b.
  struct Op {
    char kind;
    std::size_t a;
    std::size_t b;
  };
  std::vector<Op> ops;
  for (std::size_t i = 0; i < head; ++i) ops.push_back({' ', i, i});
  if (n * m <= 4000000) {
    std::vector<std::uint32_t> lcs((n + 1) * (m + 1), 0);
    const auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return lcs[i * (m + 1) + j]; };
    for (std::size_t i = n; i-- > 0;) {
      for (std::size_t j = m; j-- > 0;) {
        at(i, j) = a[head + i] == b[head + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
      }
    }
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[head + i] == b[head + j]) {
        ops.push_back({' ', head + i++, head + j++});
      } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
        ops.push_back({'-', head + i++, head + j});
      } else {
        ops.push_back({'+', head + i, head + j++});
      }
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) ops.push_back({'-', head + i, head});
    for (std::size_t j = 0; j < m; ++j) ops.push_back({'+', head + n, head + j});
  }
  for (std::size_t t = 0; t < tail; ++t) ops.push_back({' ', a.size() - tail + t, b.size() - tail + t});

  std::string out;
  std::size_t written = 0;
  std::size_t k = 0;
  while (k < ops.size()) {
    if (ops[k].kind == ' ') {
      ++k;
      continue;
    }
    // A hunk: from `context` lines before this change to `context` lines after the last change that follows within
    // 2 * context unchanged lines.
    const std::size_t start = k > context ? k - context : 0;
    std::size_t end = k;
    std::size_t same = 0;
    for (std::size_t q = k; q < ops.size(); ++q) {
      if (ops[q].kind == ' ') {
        if (++same > 2 * context) break;
      } else {
        same = 0;
        end = q;
      }
    }
    end = std::min(ops.size(), end + context + 1);
    out += fmt::format("@@ golden line {}, actual line {} @@\n", ops[start].a + 1, ops[start].b + 1);
    for (std::size_t q = start; q < end; ++q) {
      if (written == max_lines) {
        out += "... (diff cut here)\n";
        return out;
      }
      const std::string_view line = ops[q].kind == '+' ? b[ops[q].b] : a[ops[q].a];
      out += ops[q].kind;
      out += line;
      out += '\n';
      ++written;
    }
    k = end;
  }
  if (expected.size() != actual.size() && out.empty()) out = "(the texts differ only in their final newline)\n";
  return out;
}

/// The JSON Patch (RFC 6902) from `expected` to `actual`, one operation a line
/// (`replace /bindings/0/version: 1 -> 2`), at most `max_ops` of them; "" when equal.
inline std::string json_patch_text(const nlohmann::json& expected, const nlohmann::json& actual,
                                   std::size_t max_ops = 40) {
  const nlohmann::json patch = nlohmann::json::diff(expected, actual);
  std::string out;
  std::size_t shown = 0;
  for (const auto& op : patch) {
    if (shown++ == max_ops) {
      out += fmt::format("... and {} more\n", patch.size() - max_ops);
      break;
    }
    const std::string kind = op.at("op").get<std::string>();
    const std::string path = op.at("path").get<std::string>();
    const auto excerpt = [](const nlohmann::json& v) {
      std::string s = v.dump();
      if (s.size() > 200) s = s.substr(0, 200) + "...";
      return s;
    };
    if (kind == "replace") {
      out += fmt::format("replace {}: {} -> {}\n", path, excerpt(expected.at(nlohmann::json::json_pointer(path))),
                         excerpt(op.at("value")));
    } else if (kind == "add") {
      out += fmt::format("add {}: {}\n", path, excerpt(op.at("value")));
    } else {
      out += fmt::format("{} {}: was {}\n", kind, path, excerpt(expected.at(nlohmann::json::json_pointer(path))));
    }
  }
  return out;
}

/// True when the environment asks to rewrite golden files (CAIRN_UPDATE_GOLDEN=1).
inline bool updating_golden() {
  const char* update = std::getenv("CAIRN_UPDATE_GOLDEN");
  return update && std::string_view(update) == "1";
}

/// Compares `actual` with the golden file at `path`, or writes it there when CAIRN_UPDATE_GOLDEN=1. Returns true
/// when they are equal (or the file was written); otherwise reports a failure naming the file, with a line diff and
/// the way to regenerate it, and returns false. A missing or unwritable file is a failure too.
inline bool check_golden_text(const std::string& path, const std::string& actual) {
  if (updating_golden()) {
    if (golden_detail::write_file(path, actual)) return true;
    report_failure(fmt::format("golden file {}: could not be written (CAIRN_UPDATE_GOLDEN=1)", path));
    return false;
  }
  std::string expected;
  if (!golden_detail::read_file(path, expected)) {
    report_failure(
        fmt::format("golden file {}: cannot be read; create it with CAIRN_UPDATE_GOLDEN=1, then review "
                    "and commit it",
                    path));
    return false;
  }
  if (expected == actual) return true;
  report_failure(
      fmt::format("golden file {} differs from this run (- golden, + actual; regenerate with "
                  "CAIRN_UPDATE_GOLDEN=1 if the change is meant, then review git diff):\n{}",
                  path, line_diff(expected, actual)));
  return false;
}

/// check_golden_text for a JSON document, written as `actual.dump(2)` and a newline; a difference shows the JSON
/// Patch operations as well as the line diff (and a golden file that is not JSON, the line diff alone).
inline bool check_golden(const std::string& path, const nlohmann::json& actual) {
  const std::string text = actual.dump(2) + "\n";
  if (updating_golden()) return check_golden_text(path, text);
  std::string expected;
  if (!golden_detail::read_file(path, expected) || expected == text) return check_golden_text(path, text);
  const nlohmann::json parsed = nlohmann::json::parse(expected, nullptr, false);
  if (parsed.is_discarded()) return check_golden_text(path, text);
  report_failure(
      fmt::format("golden file {} differs from this run (regenerate with CAIRN_UPDATE_GOLDEN=1 if the "
                  "change is meant, then review git diff)\nJSON Patch from the golden file to this run:\n"
                  "{}line diff (- golden, + actual):\n{}",
                  path, json_patch_text(parsed, actual), line_diff(expected, text)));
  return false;
}

/// "Everything a run did" as one JSON document with a stable order, for a golden file: the store's contents (every
/// id of each tenant given, every version, each record's JSON), the calls a RecordingStore recorded, the state of an
/// ExecutionContext and of a GoalEngine (or anything with `state()` / `to_json()`), and the prompts a fake was given.
/// Only the parts given appear, under "store", "calls", "context", "engine" and "prompts". Reading the store goes
/// around a RecordingStore (its inner store), so dumping records no calls.
class RunDump {
 public:
  /// Every record of `tenant_id` in `store`: {"<tenant>": {"<id>": [record JSON of version 1, 2, ...]}}.
  RunDump& store(const ArtifactStore& store, const std::string& tenant_id) {
    const ArtifactStore* source = &store;
    if (const auto* recording = dynamic_cast<const RecordingStore*>(&store)) source = recording->inner().get();
    nlohmann::json ids = nlohmann::json::object();
    ListQuery query;
    query.limit = ListQuery::max_limit;
    while (true) {
      ListPage page = source->list(tenant_id, query);
      for (const ArtifactPtr& latest : page.items) {
        nlohmann::json versions = nlohmann::json::array();
        for (std::uint64_t v : source->versions(latest->id(), tenant_id)) {
          if (ArtifactPtr r = source->fetch(latest->id(), tenant_id, v)) versions.push_back(*r);
        }
        ids[latest->id()] = std::move(versions);
      }
      for (const std::string& id : page.unreadable) ids[id] = "unreadable";
      if (!page.next_cursor) break;
      query.cursor = *page.next_cursor;
    }
    doc_["store"][tenant_id] = std::move(ids);
    return *this;
  }

  /// The calls `store` recorded, in order: number, operation, tenant, id, version, outcome and error.
  RunDump& calls(const RecordingStore& store) {
    nlohmann::json calls = nlohmann::json::array();
    for (const StoreCall& c : store.calls()) {
      nlohmann::json one = {{"number", c.number},    {"operation", to_string(c.operation)},
                            {"tenant", c.tenant_id}, {"id", c.id},
                            {"version", c.version},  {"outcome", to_string(c.outcome)}};
      if (!c.error.empty()) one["error"] = c.error;
      calls.push_back(std::move(one));
    }
    doc_["calls"] = std::move(calls);
    return *this;
  }

  /// An ExecutionContext's `state()`: bindings, messages, recorded tool calls.
  template <class Context>
  RunDump& context(const Context& ctx) {
    doc_["context"] = ctx.state();
    return *this;
  }

  /// A GoalEngine's `to_json()`: goals, evidence, what it is waiting for.
  template <class Engine>
  RunDump& engine(const Engine& engine) {
    doc_["engine"] = engine.to_json();
    return *this;
  }

  /// The prompts a scripted fake was given, under "prompts"/`name`.
  template <class Fake>
  RunDump& prompts(const std::string& name, const Fake& fake) {
    doc_["prompts"][name] = fake.prompts();
    return *this;
  }

  /// Anything else, under `key`.
  RunDump& add(const std::string& key, nlohmann::json value) {
    doc_[key] = std::move(value);
    return *this;
  }

  const nlohmann::json& json() const noexcept { return doc_; }

 private:
  nlohmann::json doc_ = nlohmann::json::object();
};

}  // namespace testing
CAIRN_END_NAMESPACE
