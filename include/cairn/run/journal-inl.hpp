// cairn — the function bodies of cairn/run/journal.hpp (docs/api.md, "Compiled mode"). Header-only, the default,
// that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are compiled once, into
// cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/run/journal.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE bool operator==(const JournalEntry& a, const JournalEntry& b) {
  return a.seq == b.seq && a.kind == b.kind && a.data == b.data && a.time == b.time;
}

CAIRN_INLINE void to_json(nlohmann::json& j, const JournalEntry& e) {
  j = {{"seq", e.seq}, {"kind", e.kind}, {"data", e.data}, {"time", e.time}};
}

CAIRN_INLINE std::uint64_t RunJournal::append(const std::string& tenant_id, const std::string& run_id,
                                              std::uint64_t expected_seq, std::vector<JournalEntry> entries) {
  return detail::observe_call(
      observer_.get(), EventKind::journal, "append", tenant_id, run_id,
      [&] { return append_unobserved(tenant_id, run_id, expected_seq, entries); },
      [&](Event& e, std::uint64_t) {
        e.items = entries.size();
        for (const auto& entry : entries) e.bytes_in += detail::json_bytes(entry.data);
      });
}

CAIRN_INLINE std::uint64_t RunJournal::append_unobserved(const std::string& tenant_id, const std::string& run_id,
                                                         std::uint64_t expected_seq,
                                                         std::vector<JournalEntry>& entries) {
  check_ids(tenant_id, run_id, "append");
  if (entries.empty()) throw invalid_argument(fmt::format("append to run '{}': no entries", excerpt(run_id)));
  if (expected_seq > max_seq - entries.size()) {
    throw invalid_argument(fmt::format("append to run '{}': sequence number out of range", excerpt(run_id)));
  }
  const std::int64_t now = detail::now_ms(clock_.get());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    JournalEntry& e = entries[i];
    if (e.kind.empty() || e.kind.size() > 128 || detail::has_control_char(e.kind) || !detail::is_valid_utf8(e.kind)) {
      throw invalid_argument(
          fmt::format("append to run '{}': entries[{}].kind must be 1 to 128 printable "
                      "UTF-8 bytes (got '{}')",
                      excerpt(run_id), i, excerpt(e.kind)));
    }
    e.seq = expected_seq + 1 + i;
    if (e.time == 0) e.time = now;
  }
  do_append(tenant_id, run_id, expected_seq, entries, now);
  return expected_seq + entries.size();
}

CAIRN_INLINE std::optional<RunInfo> RunJournal::info(const std::string& tenant_id, const std::string& run_id) const {
  return detail::observe_call(
      observer_.get(), EventKind::journal, "info", tenant_id, run_id,
      [&] {
        check_ids(tenant_id, run_id, "info");
        return head(tenant_id, run_id);
      },
      [](Event& e, const std::optional<RunInfo>& r) { e.items = r ? 1 : 0; });
}

CAIRN_INLINE std::vector<JournalEntry> RunJournal::read(const std::string& tenant_id, const std::string& run_id,
                                                        std::uint64_t from_seq, std::uint64_t to_seq) const {
  return detail::observe_call(
      observer_.get(), EventKind::journal, "read", tenant_id, run_id,
      [&] {
        check_ids(tenant_id, run_id, "read");
        std::vector<JournalEntry> out;
        read_chain(tenant_id, run_id, std::max<std::uint64_t>(from_seq, 1), to_seq, out, 0);
        return out;
      },
      read_sizes);
}

CAIRN_INLINE std::vector<JournalEntry> RunJournal::read_for_restore(const std::string& tenant_id,
                                                                    const std::string& run_id,
                                                                    std::uint64_t at_seq) const {
  return detail::observe_call(
      observer_.get(), EventKind::journal, "read_for_restore", tenant_id, run_id,
      [&] { return read_for_restore_unobserved(tenant_id, run_id, at_seq); }, read_sizes);
}

CAIRN_INLINE std::vector<JournalEntry> RunJournal::read_for_restore_unobserved(const std::string& tenant_id,
                                                                               const std::string& run_id,
                                                                               std::uint64_t at_seq) const {
  check_ids(tenant_id, run_id, "read_for_restore");
  const RunInfo run = require(tenant_id, run_id, "read_for_restore");
  if (at_seq == max_seq) at_seq = run.last_seq;
  if (at_seq > run.last_seq) {
    throw invalid_argument(
        fmt::format("read_for_restore: run '{}' ends at seq {} (asked for {})", excerpt(run_id), run.last_seq, at_seq));
  }
  const std::uint64_t from = snapshot_at(tenant_id, run, at_seq, 0);
  std::vector<JournalEntry> out;
  if (at_seq > 0) read_chain(tenant_id, run_id, from == 0 ? 1 : from, at_seq, out, 0);
  return out;
}

CAIRN_INLINE void RunJournal::fork(const std::string& tenant_id, const std::string& source_run_id, std::uint64_t at_seq,
                                   const std::string& new_run_id) {
  detail::observe_call(
      observer_.get(), EventKind::journal, "fork", tenant_id, new_run_id,
      [&] { fork_unobserved(tenant_id, source_run_id, at_seq, new_run_id); }, [](Event&) {});
}

CAIRN_INLINE void RunJournal::fork_unobserved(const std::string& tenant_id, const std::string& source_run_id,
                                              std::uint64_t at_seq, const std::string& new_run_id) {
  check_ids(tenant_id, source_run_id, "fork");
  check_ids(tenant_id, new_run_id, "fork");
  const RunInfo source = require(tenant_id, source_run_id, "fork");
  if (at_seq > source.last_seq || (at_seq > source.fork_seq && at_seq < source.kept_from)) {
    throw invalid_argument(fmt::format("fork: run '{}' holds seq {} to {}; cannot fork at {}", excerpt(source_run_id),
                                       source.kept_from, source.last_seq, at_seq));
  }
  do_create_fork(tenant_id, new_run_id, source_run_id, at_seq, detail::now_ms(clock_.get()));
}

CAIRN_INLINE void RunJournal::remove(const std::string& tenant_id, const std::string& run_id) {
  detail::observe_call(
      observer_.get(), EventKind::journal, "remove", tenant_id, run_id,
      [&] {
        check_ids(tenant_id, run_id, "remove");
        require(tenant_id, run_id, "remove");
        refuse_if_forked(tenant_id, run_id, "remove");
        do_remove(tenant_id, run_id, std::numeric_limits<std::int64_t>::max());
      },
      [](Event&) {});
}

CAIRN_INLINE std::size_t RunJournal::prune(const std::string& tenant_id, const std::string& run_id) {
  return detail::observe_call(
      observer_.get(), EventKind::journal, "prune", tenant_id, run_id,
      [&] { return prune_unobserved(tenant_id, run_id); }, [](Event& e, std::size_t n) { e.items = n; });
}

CAIRN_INLINE std::size_t RunJournal::prune_unobserved(const std::string& tenant_id, const std::string& run_id) {
  check_ids(tenant_id, run_id, "prune");
  const RunInfo run = require(tenant_id, run_id, "prune");
  std::uint64_t keep = own_snapshot_at(tenant_id, run, run.last_seq);
  if (keep == 0) return 0;
  for (const RunFork& f : forks(tenant_id, run_id)) {
    if (f.fork_seq <= run.fork_seq) continue;  // reads our source's entries, not ours
    const std::uint64_t need = own_snapshot_at(tenant_id, run, f.fork_seq);
    keep = std::min(keep, need == 0 ? run.kept_from : need);
  }
  if (keep <= run.kept_from) return 0;
  return do_prune(tenant_id, run_id, keep);
}

CAIRN_INLINE std::vector<std::string> RunJournal::sweep(const std::string& tenant_id, std::int64_t updated_before) {
  return detail::observe_call(
      observer_.get(), EventKind::journal, "sweep", tenant_id, std::string_view(),
      [&] { return sweep_unobserved(tenant_id, updated_before); },
      [](Event& e, const std::vector<std::string>& removed) { e.items = removed.size(); });
}

CAIRN_INLINE std::vector<std::string> RunJournal::sweep_unobserved(const std::string& tenant_id,
                                                                   std::int64_t updated_before) {
  detail_check_tenant(tenant_id);
  std::vector<std::string> removed;
  std::unordered_set<std::string> gone;
  // Children first: removing a stale fork may free its stale source, which is tried at once, so a chain of n
  // stale forks goes in one pass (a pass per link made it n passes over every stale run: quadratic). Another
  // pass follows while one removed something, for sources freed in other ways.
  for (bool again = true; again;) {
    again = false;
    const std::vector<std::string> stale = stale_runs(tenant_id, updated_before);
    const std::unordered_set<std::string_view> is_stale(stale.begin(), stale.end());
    for (const std::string& first : stale) {
      for (std::optional<std::string> run_id = first; run_id && !gone.count(*run_id);) {
        if (!forks(tenant_id, *run_id).empty()) break;
        const std::optional<RunInfo> run = head(tenant_id, *run_id);
        if (!run) break;
        // Removed only if still idle: a writer may have appended since stale_runs() looked.
        try {
          if (!do_remove(tenant_id, *run_id, updated_before)) break;
        } catch (const state_error&) {
          break;  // forked meanwhile
        }
        removed.push_back(*run_id);
        gone.insert(*run_id);
        again = true;
        run_id = run->forked_from && is_stale.count(*run->forked_from) ? run->forked_from : std::nullopt;
      }
    }
  }
  return removed;
}

CAIRN_INLINE void RunJournal::check_ids(const std::string& tenant_id, const std::string& run_id, const char* call) {
  detail_check_tenant(tenant_id);
  if (run_id.empty() || run_id.size() > max_run_id_length || detail::has_control_char(run_id) ||
      !detail::is_valid_utf8(run_id)) {
    throw invalid_argument(fmt::format("{}: run id '{}' must be 1 to {} bytes of printable UTF-8", call,
                                       excerpt(run_id), max_run_id_length));
  }
}

CAIRN_INLINE RunInfo RunJournal::require(const std::string& tenant_id, const std::string& run_id,
                                         const char* call) const {
  auto run = head(tenant_id, run_id);
  if (!run) {
    throw not_found(fmt::format("{}: run '{}' not found in tenant '{}'", call, excerpt(run_id), excerpt(tenant_id)));
  }
  return *std::move(run);
}

CAIRN_INLINE void RunJournal::refuse_if_forked(const std::string& tenant_id, const std::string& run_id,
                                               const char* call) const {
  const auto children = forks(tenant_id, run_id);
  if (children.empty()) return;
  std::string names;
  for (std::size_t i = 0; i < children.size() && i < 5; ++i) {
    names += (i ? ", '" : "'") + excerpt(children[i].run_id) + "'";
  }
  if (children.size() > 5) names += fmt::format(" and {} more", children.size() - 5);
  throw state_error(fmt::format("{}: run '{}' has forks that read its entries ({}); remove them first", call,
                                excerpt(run_id), names));
}

CAIRN_INLINE std::uint64_t RunJournal::snapshot_at(const std::string& tenant_id, const RunInfo& run,
                                                   std::uint64_t at_seq, int depth) const {
  if (at_seq > run.fork_seq) {
    if (const std::uint64_t own = own_snapshot_at(tenant_id, run, at_seq); own != 0) return own;
  }
  if (!run.forked_from || run.fork_seq == 0) return 0;
  check_depth(run, depth);
  const auto source = head(tenant_id, *run.forked_from);
  if (!source) return 0;
  return snapshot_at(tenant_id, *source, std::min(at_seq, run.fork_seq), depth + 1);
}

CAIRN_INLINE void RunJournal::read_chain(const std::string& tenant_id, const std::string& run_id, std::uint64_t from,
                                         std::uint64_t to, std::vector<JournalEntry>& out, int depth) const {
  const RunInfo run = require(tenant_id, run_id, "read");
  to = std::min(to, run.last_seq);
  if (from > to) return;
  if (from <= run.fork_seq && run.forked_from) {
    check_depth(run, depth);
    read_chain(tenant_id, *run.forked_from, from, std::min(to, run.fork_seq), out, depth + 1);
  }
  const std::uint64_t own_from = std::max(from, run.fork_seq + 1);
  if (own_from > to) return;
  if (own_from < run.kept_from) {
    throw state_error(fmt::format("read: run '{}' was pruned below seq {}; seq {} is gone", excerpt(run_id),
                                  run.kept_from, own_from));
  }
  auto own = own_entries(tenant_id, run_id, own_from, to);
  if (own.size() != to - own_from + 1) {
    throw storage_error(fmt::format("read: run '{}' should hold seq {} to {} but has {} of them", excerpt(run_id),
                                    own_from, to, own.size()));
  }
  out.insert(out.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
}

CAIRN_INLINE void RunJournal::check_depth(const RunInfo& run, int depth) {
  if (depth >= 1000) {
    throw state_error(fmt::format("read: run '{}' is a fork of a fork ... more than 1000 deep", excerpt(run.run_id)));
  }
}

CAIRN_INLINE void RunJournal::read_sizes(Event& e, const std::vector<JournalEntry>& entries) {
  e.items = entries.size();
  for (const auto& entry : entries) e.bytes_out += detail::json_bytes(entry.data);
}

CAIRN_END_NAMESPACE
