// The Run layer itself: what it writes besides the participants' entries (checkpoints by bytes, snapshots only on
// request), batches (a sync entry inside one, a body that throws), a resume that moves no ordering key, damaged
// whole states, and the whole state of every participant kind rebuilt byte for byte at every sequence number.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../goals/goals_test_support.hpp"
#include "../workflow/workspace.hpp"
#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/goals/engine.hpp"
#include "cairn/goals/sop.hpp"
#include "cairn/observe.hpp"
#include "cairn/run/memory_journal.hpp"
#include "cairn/run/run.hpp"
#include "cairn/workflow/machine.hpp"
#include "catch.hpp"
#if CAIRN_TEST_WITH_SQLITE
#include <sqlite3.h>
#include <unistd.h>

#include "cairn/store/sqlite_journal.hpp"
#endif

using namespace cairn;
using nlohmann::json;

namespace {

ArtifactRecord::Builder data(json v) {
  auto b = ArtifactRecord::builder();
  b.type(ArtifactType::data).description("a value").value(std::move(v));
  return b;
}

Message said(Role role, std::string text, std::int64_t at) { return Message{role, std::move(text), at}; }

// A host's own participant: a list of items and their total length. Records each change before applying it, and
// refuses any recorded state it cannot take whole.
class Tally : public RunParticipant {
 public:
  Tally() = default;
  Tally(const Tally&) = delete;
  Tally& operator=(const Tally&) = delete;
  ~Tally() override {
    if (run_) run_->detach(*this);
  }
  void attach(Run& run) {
    run.attach(*this);
    run_ = &run;
  }
  void add(const std::string& item) {
    if (run_) run_->record("tally", "add", {{"item", item}});
    apply(item);
  }
  std::string participant_name() const override { return "tally"; }
  json participant_state() const override { return {{"items", items_}, {"total", total_}}; }
  void restore_participant(const json& state) override {
    if (!state.is_object() || state.size() != 2) throw std::runtime_error("tally: expected {items, total}");
    const auto items = state.find("items");
    const auto total = state.find("total");
    if (items == state.end() || !items->is_array()) throw std::runtime_error("tally: 'items' must be an array");
    if (total == state.end() || !total->is_number_unsigned()) {
      throw std::runtime_error("tally: 'total' must be a non-negative integer");
    }
    std::vector<std::string> restored;
    for (const auto& i : *items) {
      if (!i.is_string()) throw std::runtime_error("tally: items must be strings");
      restored.push_back(i.get<std::string>());
    }
    items_ = std::move(restored);
    total_ = total->get<std::size_t>();
  }
  void apply_participant_entry(std::string_view kind, const JournalEntry& e) override {
    if (kind != "add" || !e.data.is_object() || !e.data.contains("item") || !e.data["item"].is_string()) {
      throw std::runtime_error("tally: not an add {item}");
    }
    apply(e.data["item"].get<std::string>());
  }
  void participant_detached() noexcept override { run_ = nullptr; }

 private:
  void apply(const std::string& item) {
    items_.push_back(item);
    total_ += item.size();
  }
  std::vector<std::string> items_;
  std::size_t total_ = 0;
  Run* run_ = nullptr;
};

// A host participant whose state churns without growing: 16 dials of 8 characters each, one set per entry.
class Dials : public RunParticipant {
 public:
  Dials() : dials_(16, std::string(8, '0')) {}
  Dials(const Dials&) = delete;
  Dials& operator=(const Dials&) = delete;
  ~Dials() override {
    if (run_) run_->detach(*this);
  }
  void attach(Run& run) {
    run.attach(*this);
    run_ = &run;
  }
  void set(std::size_t i, const std::string& v) {
    if (run_) run_->record("dials", "set", {{"i", i}, {"v", v}});
    dials_.at(i) = v;
  }
  std::string participant_name() const override { return "dials"; }
  json participant_state() const override { return {{"dials", dials_}}; }
  void restore_participant(const json& state) override {
    if (!state.is_object() || !state.contains("dials") || !state["dials"].is_array() || state["dials"].size() != 16) {
      throw std::runtime_error("dials: expected {dials: [16 strings]}");
    }
    dials_ = state["dials"].get<std::vector<std::string>>();
  }
  void apply_participant_entry(std::string_view kind, const JournalEntry& e) override {
    if (kind != "set") throw std::runtime_error("dials: not a set");
    dials_.at(e.data.at("i").get<std::size_t>()) = e.data.at("v").get<std::string>();
  }
  void participant_detached() noexcept override { run_ = nullptr; }

 private:
  std::vector<std::string> dials_;
  Run* run_ = nullptr;
};

std::size_t bytes_of(const std::vector<JournalEntry>& entries, const std::string& kind_prefix, bool states) {
  std::size_t n = 0;
  for (const auto& e : entries) {
    if (e.kind.compare(0, kind_prefix.size(), kind_prefix) != 0) continue;
    const bool is_state = e.kind.size() > 6 && e.kind.compare(e.kind.size() - 6, 6, ".state") == 0;
    if (is_state == states) n += e.data.dump().size();
  }
  return n;
}

std::size_t count_kind(const std::vector<JournalEntry>& entries, const std::string& kind) {
  std::size_t n = 0;
  for (const auto& e : entries) n += e.kind == kind ? 1 : 0;
  return n;
}

struct Fixture {
  std::shared_ptr<InMemoryArtifactStore> store = std::make_shared<InMemoryArtifactStore>();
  std::shared_ptr<InMemoryRunJournal> journal = std::make_shared<InMemoryRunJournal>();

  json restored_context(const std::string& run_id, std::uint64_t seq = 0) {
    auto run = seq == 0 ? std::make_unique<Run>(journal, "acme", run_id)
                        : std::make_unique<Run>(journal, "acme", run_id, RunAt{seq});
    ExecutionContext ctx(store, "acme");
    ctx.attach(*run);
    return ctx.state();
  }
};

}  // namespace

TEST_CASE("by default a run writes no snapshot and never copies a context: its entries are its state") {
  Fixture f;
  {
    Run run(f.journal, "acme", "talk");
    ExecutionContext ctx(f.store, "acme");
    ctx.attach(run);
    for (int i = 0; i < 600; ++i) {
      ctx.add_message(said(Role::user, std::string(400, 'u'), i));
      if (i % 50 == 0) ctx.add_artifact("note", data(i));
      ctx.add_message(said(Role::assistant, std::string(400, 'a'), i));
    }
  }
  const auto entries = f.journal->read("acme", "talk");
  CHECK(count_kind(entries, snapshot_kind) == 0);
  CHECK(count_kind(entries, "context.state") == 1);  // the one written when it attached
  CHECK(entries.size() == 1 + 1200 + 12);
  const auto state = f.restored_context("talk");
  CHECK(state["messages"].size() == 1200);
  CHECK(state["bindings"].size() == 1);
}

TEST_CASE("a churning participant is checkpointed by bytes: its states stay within 1/factor of its entries") {
  for (const double factor : {1.0, 3.0}) {
    Fixture f;
    std::vector<std::pair<std::uint64_t, std::string>> states;
    {
      Run run(f.journal, "acme", "tally", RunOptions{0, factor});
      Tally tally;
      tally.attach(run);
      ExecutionContext ctx(f.store, "acme");
      ctx.attach(run);
      std::mt19937 rng(7);
      for (int i = 0; i < 2000; ++i) {
        tally.add(std::string(1 + rng() % 40, 'x'));
        if (i % 3 == 0) ctx.add_message(said(Role::user, "m" + std::to_string(i), i));
        if (i % 97 == 0) states.emplace_back(run.seq(), tally.participant_state().dump());
      }
      states.emplace_back(run.seq(), tally.participant_state().dump());
    }
    INFO("factor " << factor);
    const auto entries = f.journal->read("acme", "tally");
    const std::size_t state_bytes = bytes_of(entries, "tally.", true);
    const std::size_t entry_bytes = bytes_of(entries, "tally.", false);
    // Checkpoints happen (a restore never applies more than ~factor x the state's bytes of entries) ...
    CHECK(count_kind(entries, "tally.state") > 3);
    // ... and total at most (1 + 1/factor) x the entries (1/factor when a state does not grow): each one is written
    // once the entries since the last reach factor x that last state, and is larger than it by at most those entries.
    CHECK(static_cast<double>(state_bytes) <= (1 + 1 / factor) * static_cast<double>(entry_bytes) + 64);
    // A restore applies at most about factor x the newest state's bytes of entries after it.
    std::size_t after_last = 0;
    std::size_t last_state = 0;
    for (const auto& e : entries) {
      if (e.kind == "tally.state") {
        after_last = 0;
        last_state = e.data.dump().size();
      } else if (e.kind == "tally.add") {
        after_last += e.data.dump().size();
      }
    }
    CHECK(static_cast<double>(after_last) <= factor * static_cast<double>(last_state) + 64);
    CHECK(count_kind(entries, "context.state") == 1);  // the context is never checkpointed
    for (const auto& [seq, state] : states) {
      Run at(f.journal, "acme", "tally", RunAt{seq});
      Tally t;
      t.attach(at);
      CHECK(t.participant_state().dump() == state);
    }
  }
}

TEST_CASE("a participant that churns without growing gets checkpoints of about 1/factor of its entries' bytes") {
  for (const double factor : {1.0, 4.0}) {
    Fixture f;
    std::string last;
    {
      Run run(f.journal, "acme", "dials", RunOptions{0, factor});
      Dials dials;
      dials.attach(run);
      std::mt19937 rng(3);
      for (int i = 0; i < 3000; ++i) dials.set(rng() % 16, std::to_string(10000000 + rng() % 89999999));
      last = dials.participant_state().dump();
    }
    INFO("factor " << factor);
    const auto entries = f.journal->read("acme", "dials");
    const double states = static_cast<double>(bytes_of(entries, "dials.", true));
    const double changes = static_cast<double>(bytes_of(entries, "dials.", false));
    const double one_state = static_cast<double>(last.size());
    CHECK(states <= changes / factor + one_state);  // + the state written when it attached
    CHECK(states >= 0.8 * changes / factor);
    Run run(f.journal, "acme", "dials");
    Dials d;
    d.attach(run);
    CHECK(d.participant_state().dump() == last);
  }
}

TEST_CASE("a sync entry inside a batch commits alone, the batch's entries stay pending and commit with it") {
  Fixture f;
  Run run(f.journal, "acme", "sync", RunOptions{2});  // a snapshot every 2 entries: one is due during the batch
  ExecutionContext ctx(f.store, "acme");
  ctx.attach(run);
  ctx.add_message(said(Role::user, "before", 1));
  const std::uint64_t before = run.seq();
  std::string at_sync;
  {
    auto group = run.batch();
    ctx.add_message(said(Role::user, "in the batch 1", 2));
    ctx.add_message(said(Role::user, "in the batch 2", 3));
    ctx.record_call_intended("mail-1", "send_email", "h");  // sync: committed now, alone
    CHECK(run.seq() == before + 1);
    const auto entries = f.journal->read("acme", "sync");
    CHECK(entries.back().kind == "context.tool_intended");
    at_sync = f.restored_context("sync").dump();
    group.commit();
  }
  // The journal at the sync entry holds the call in doubt and none of the batch's messages.
  const json s = json::parse(at_sync);
  CHECK(s["messages"].size() == 1);
  CHECK(s["calls"]["mail-1"]["status"] == "intended");
  // No snapshot was taken while the participants held the batch's pending changes: nothing applies twice.
  CHECK(f.restored_context("sync").dump() == ctx.state().dump());
  CHECK(ctx.state()["messages"].size() == 3);
  const auto entries = f.journal->read("acme", "sync");
  for (std::uint64_t seq = 1; seq <= run.seq(); ++seq) {
    INFO("seq " << seq);
    CHECK(f.restored_context("sync", seq)["messages"].size() <= 3);
  }
}

TEST_CASE("a batch whose body throws half-way commits nothing of it, the run refuses until reopened") {
  Fixture f;
  std::string before_state;
  {
    Run run(f.journal, "acme", "thrown");
    ExecutionContext ctx(f.store, "acme");
    ctx.attach(run);
    ctx.add_message(said(Role::user, "kept", 1));
    before_state = ctx.state().dump();
    const std::uint64_t before = run.seq();
    try {
      auto outer = run.batch();
      ctx.add_message(said(Role::user, "lost 1", 2));
      {
        auto inner = run.batch();
        ctx.add_artifact("lost", data(1));
        throw std::runtime_error("the body failed");
      }
    } catch (const std::runtime_error&) {
    }
    CHECK(run.seq() == before);
    CHECK(f.journal->info("acme", "thrown")->last_seq == before);
    // The context holds what the journal does not: recording more would journal a state that never was.
    CHECK_THROWS_WITH(ctx.add_message(said(Role::user, "after", 3)),
                      cairn_test::ContainsSubstring("run 'thrown': a batch was abandoned"));
    CHECK_THROWS_AS(run.snapshot(), state_error);
    CHECK(f.journal->info("acme", "thrown")->last_seq == before);
  }
  CHECK(f.restored_context("thrown").dump() == before_state);
  // A reopened run goes on from there.
  Run run(f.journal, "acme", "thrown");
  ExecutionContext ctx(f.store, "acme");
  ctx.attach(run);
  ctx.add_message(said(Role::user, "after", 3));
  CHECK(ctx.state()["messages"].size() == 2);
  // A batch that ends normally still commits, also when an exception was in flight when it was made.
  try {
    throw std::runtime_error("outer");
  } catch (const std::runtime_error&) {
    auto group = run.batch();
    ctx.add_message(said(Role::user, "from a handler", 4));
  }
  CHECK(f.restored_context("thrown").dump() == ctx.state().dump());
  CHECK(ctx.state()["messages"].size() == 3);
  // A body that throws before recording anything loses nothing: the run goes on.
  try {
    auto group = run.batch();
    throw std::runtime_error("refused before any change");
  } catch (const std::runtime_error&) {
  }
  ctx.add_message(said(Role::user, "still recording", 5));
  CHECK(f.restored_context("thrown").dump() == ctx.state().dump());
}

TEST_CASE("a context resumed at any point, before its first binding too, goes on exactly as the uninterrupted one") {
  Fixture f;
  std::vector<ArtifactPtr> records;
  for (int i = 0; i < 3; ++i) records.push_back(f.store->store(*data(i).tenant_id("acme").build()));
  // One recorded entry per step: a resume after step k continues with step k + 1.
  const auto step = [&](ExecutionContext& ctx, int i) {
    switch (i) {
      case 0: ctx.add_message(said(Role::user, "hello", 10)); break;
      case 1: ctx.bind("a", records[0]); break;
      case 2: ctx.add_message(said(Role::assistant, "bound a", 11)); break;
      case 3: ctx.bind("b", records[1]); break;
      case 4: ctx.bind("a", records[2]); break;  // a rebinding keeps its place, takes a new write key
      case 5: ctx.bind("c", records[1]); break;
      default: ctx.add_message(said(Role::user, "bye", 12)); break;
    }
  };
  const int steps = 7;
  std::vector<std::uint64_t> seqs;  // the run's seq before step k
  std::string expected;
  {
    Run run(f.journal, "acme", "straight");
    ExecutionContext ctx(f.store, "acme");
    ctx.attach(run);
    for (int i = 0; i < steps; ++i) {
      seqs.push_back(run.seq());
      step(ctx, i);
    }
    expected = ctx.state().dump();
  }
  REQUIRE(seqs.front() == 1);
  for (int k = 0; k < steps; ++k) {
    const std::string id = "resumed-" + std::to_string(k);
    f.journal->fork("acme", "straight", seqs[static_cast<std::size_t>(k)], id);
    Run run(f.journal, "acme", id);
    ExecutionContext ctx(f.store, "acme");
    ctx.attach(run);
    for (int i = k; i < steps; ++i) step(ctx, i);
    INFO("resumed at seq " << seqs[static_cast<std::size_t>(k)]);
    CHECK(ctx.state().dump() == expected);
  }
}

TEST_CASE("a restore fetches each bound record once, however often the name was rebound") {
  // Counts fetches: a real in-memory store, wrapped by the observer hook the library offers.
  struct Counting : Observer {
    std::size_t fetches = 0;
    void on_event(const Event& e) noexcept override {
      if (e.kind == EventKind::store && e.operation == "fetch") ++fetches;
    }
  };
  Fixture f;
  {
    Run run(f.journal, "acme", "rebinds");
    ExecutionContext ctx(f.store, "acme");
    ctx.attach(run);
    for (int i = 0; i < 200; ++i) ctx.add_artifact("n" + std::to_string(i % 3), data(i));
  }
  auto counting = std::make_shared<Counting>();
  auto watched = cairn::observed(f.store, counting);
  Run run(f.journal, "acme", "rebinds");
  ExecutionContext ctx(watched, "acme");
  ctx.attach(run);
  CHECK(counting->fetches == 3);
  CHECK(ctx.get_artifact_value("n1")->get<int>() == 199);
}

namespace {

// A run whose journal is written by hand: a context state, a message, `damaged` (a snapshot or a state), a message.
std::string resume_error(const std::shared_ptr<RunJournal>& journal, const std::shared_ptr<ArtifactStore>& store,
                         const std::string& run_id) {
  try {
    Run run(journal, "acme", run_id);
    ExecutionContext ctx(store, "acme");
    ctx.attach(run);
    Tally tally;
    if (run.holds("tally")) tally.attach(run);
    return "no error; messages: " + std::to_string(ctx.message_count());
  } catch (const state_error& e) {
    return e.what();
  }
}

const json good_context = {{"bindings", json::array()},
                           {"messages", json::array({{{"role", "user"}, {"content", "m0"}, {"timestamp", 1}}})},
                           {"calls", json::object()}};
const json good_message = {{"role", "user"}, {"content", "m"}, {"timestamp", 2}};

// Each damaged whole state, as (kind, data, what the error must say).
struct Damage {
  std::string kind;
  json data;
  std::string says;
};

std::vector<Damage> damages() {
  std::vector<Damage> out = {
      {snapshot_kind, json::array(), "snapshot at seq 3 is damaged: expected an object"},
      {snapshot_kind, json::object(), "snapshot at seq 3 is damaged: expected an object"},
      {snapshot_kind, {{"tally", {{"items", json::array()}, {"total", 0}}}}, "holds no state of participant 'context'"},
      {snapshot_kind, {{"context", json::array()}}, "entry 3 (snapshot)"},
      {snapshot_kind, {{"context", {{"bindings", json::array()}, {"messages", json::array()}}}}, "'calls' is missing"},
      {snapshot_kind,
       {{"context", {{"bindings", json::object()}, {"messages", json::array()}, {"calls", json::object()}}}},
       "'bindings' must be an array"},
      {"context.state", json::array(), "context state: expected an object"},
      {"context.state", json::object(), "context state: 'bindings' is missing"},
      {"context.state",
       {{"bindings", json::array()}, {"messages", json::object()}, {"calls", json::object()}},
       "'messages' must be an array"},
      {"context.state",
       {{"bindings", json::array()},
        {"messages", json::array({{{"role", "user"}, {"content", 7}, {"timestamp", 1}}})},
        {"calls", json::object()}},
       "messages[0]: message: 'content' must be a string"},
      {"context.state",
       {{"bindings", json::array({{{"name", "a"}, {"id", "x"}, {"version", "1"}, {"first", 3}, {"write", 3}}})},
        {"messages", json::array()},
        {"calls", json::object()}},
       "bindings[0]: binding: 'version' must be a non-negative integer"},
      {"context.state",
       {{"bindings", json::array()},
        {"messages", json::array()},
        {"calls", {{"c1", {{"call", "c1"}, {"status", "done"}}}}}},
       "call 'c1' has status 'done'"},
      {"tally.state", json::object(), "entry 3 (tally.state) cannot be applied: tally: expected {items, total}"},
      {"tally.state", {{"items", json::object()}, {"total", 1}}, "'items' must be an array"},
  };
  return out;
}

// Writes the run: context state, message, the damaged entry (seq 3), message, and a tally entry when the damage is
// the tally's (so that a tally is there to restore).
void write_damaged(RunJournal& journal, const std::string& run_id, const Damage& d) {
  std::vector<JournalEntry> entries(4);
  entries[0].kind = "context.state";
  entries[0].data = good_context;
  entries[1].kind = "context.message";
  entries[1].data = good_message;
  entries[2].kind = d.kind;
  entries[2].data = d.data;
  entries[3].kind = d.kind == "tally.state" ? "tally.add" : "context.message";
  entries[3].data = d.kind == "tally.state" ? json{{"item", "x"}} : good_message;
  (void)journal.append("acme", run_id, 0, std::move(entries));
}

}  // namespace

TEST_CASE("a damaged snapshot or state is a state_error naming the run, the seq and what is wrong") {
  Fixture f;
  const auto all = damages();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::string run_id = "damaged-" + std::to_string(i);
    write_damaged(*f.journal, run_id, all[i]);
    const std::string error = resume_error(f.journal, f.store, run_id);
    INFO(all[i].kind << " " << all[i].data.dump() << " -> " << error);
    CHECK_THAT(error, cairn_test::ContainsSubstring("run '" + run_id + "'"));
    CHECK_THAT(error, cairn_test::ContainsSubstring("seq 3") || cairn_test::ContainsSubstring("entry 3"));
    CHECK_THAT(error, cairn_test::ContainsSubstring(all[i].says));
  }
  // The same run undamaged resumes.
  write_damaged(*f.journal, "whole", Damage{"context.message", good_message, ""});
  CHECK(resume_error(f.journal, f.store, "whole") == "no error; messages: 4");
}

#if CAIRN_TEST_WITH_SQLITE
TEST_CASE("a damaged snapshot or state row in a SQLite file is a state_error naming the run, the seq and what") {
  char dir_template[] = "/tmp/cairn-run-damage-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string path = std::string(dir_template) + "/runs.db";
  auto store = std::make_shared<InMemoryArtifactStore>();
  {
    auto journal = std::make_shared<SqliteRunJournal>(path);
    const auto all = damages();
    for (std::size_t i = 0; i < all.size(); ++i) {
      // Written whole and well-formed first (a message where the damage goes), then damaged behind the journal's back.
      const std::string run_id = "damaged-" + std::to_string(i);
      write_damaged(*journal, run_id, Damage{"context.message", good_message, ""});
      sqlite3* db = nullptr;
      REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
      sqlite3_busy_timeout(db, 10000);
      sqlite3_stmt* st = nullptr;
      REQUIRE(sqlite3_prepare_v2(db, "UPDATE cairn_run_entries SET kind = ?1, data = ?2 WHERE run_id = ?3 AND seq = 3",
                                 -1, &st, nullptr) == SQLITE_OK);
      const std::string text = all[i].data.dump();
      sqlite3_bind_text(st, 1, all[i].kind.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(st, 2, text.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(st, 3, run_id.c_str(), -1, SQLITE_TRANSIENT);
      CHECK(sqlite3_step(st) == SQLITE_DONE);
      CHECK(sqlite3_changes(db) == 1);
      sqlite3_finalize(st);
      if (all[i].kind == "tally.state") {
        const std::string sql =
            "UPDATE cairn_run_entries SET kind = 'tally.add', data = '{\"item\":\"x\"}' "
            "WHERE run_id = '" +
            run_id + "' AND seq = 4";
        REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
      }
      sqlite3_close(db);
      const std::string error = resume_error(journal, store, run_id);
      INFO(all[i].kind << " " << all[i].data.dump() << " -> " << error);
      CHECK_THAT(error, cairn_test::ContainsSubstring("run '" + run_id + "'"));
      CHECK_THAT(error, cairn_test::ContainsSubstring("seq 3") || cairn_test::ContainsSubstring("entry 3"));
      CHECK_THAT(error, cairn_test::ContainsSubstring(all[i].says));
    }
  }
  std::remove(path.c_str());
  std::remove((path + "-wal").c_str());
  std::remove((path + "-shm").c_str());
  ::rmdir(dir_template);
}
#endif

namespace {

// Four participants of every kind on one run: a context, a goal engine booking a train with its tools, a workflow
// machine and a tally. `dump()` is their whole state, nothing stripped.
struct World {
  std::shared_ptr<InMemoryArtifactStore> store = std::make_shared<InMemoryArtifactStore>();
  std::shared_ptr<InMemoryRunJournal> journal = std::make_shared<InMemoryRunJournal>();
  std::shared_ptr<std::vector<json>> searches = std::make_shared<std::vector<json>>();
  std::shared_ptr<std::vector<json>> bookings = std::make_shared<std::vector<json>>();
  std::shared_ptr<SopPlanner> planner;
  ToolRegistry tools;
  cairn_test::TempWorkspace ws;
  std::function<void()> on_tool;  // called as a tool runs: its intended entry is committed, the turn's are not

  World() {
    auto sops = std::make_shared<SopRegistry>();
    sops->load_file(goals_test::source_path("examples/sops/train-booking.json"));
    planner = std::make_shared<SopPlanner>(sops);
    for (Tool t : {goals_test::train_search_tool(searches), goals_test::train_booking_tool(bookings)}) {
      auto inner = t.function;
      t.function = [this, inner](const json& in) {
        if (on_tool) on_tool();
        return inner(in);
      };
      tools.add(t);
    }
    ws.write("plan.md", "# plan");
  }
};

struct Agent {
  Run run;
  ExecutionContext ctx;
  GoalEngine engine;
  WorkflowMachine machine;
  Tally tally;
  Agent(World& w, const std::string& run_id, std::uint64_t at, RunOptions options)
      : run(at == 0 ? Run(w.journal, "acme", run_id, options) : Run(w.journal, "acme", run_id, RunAt{at}, options)),
        ctx(w.store, "acme"),
        engine(ctx, w.tools, {std::make_shared<goals_test::TextInterpreter>(), w.planner}),
        machine(cairn_test::feature_template(), w.ws.path()) {
    if (at == 0 || run.holds("context")) ctx.attach(run);
    if (at == 0 || run.holds("goals")) engine.attach(run);
    if (at == 0 || run.holds("workflow")) machine.attach(run);
    if (at == 0 || run.holds("tally")) tally.attach(run);
  }
  std::string dump() const {
    // Before start a machine has only its template, which the rebuilt one has too (it comes from the run).
    const std::string workflow = machine.started() ? machine.to_json().dump() : machine.workflow_template().name();
    return ctx.state().dump() + "\n" + engine.to_json().dump() + "\n" + workflow + "\n" +
           tally.participant_state().dump();
  }
};

const std::vector<std::string> conversation = {"new: Find me a train to Paris",
                                               "ev: origin = London",
                                               "ev: destination = Paris",
                                               "ev: date = 2025-10-01",
                                               R"(ev: selectedTrain = {"id": "ES9024", "departs": "10:31"})",
                                               "ev: confirmation = yes"};

}  // namespace

TEST_CASE("a run of every participant kind is rebuilt byte for byte at every seq, nothing stripped") {
  // Factor 0: never checkpointed, so a restore applies every patch of the engine and the machine since attach.
  for (const double factor : {1.0, 0.25, 0.0}) {
    World w;
    const RunOptions options{0, factor};
    // The whole state after every append that a crash can leave: seq -> dump. Inside a goal turn the tool's
    // intended entry is committed alone: the state there is the last one with that call in doubt.
    std::map<std::uint64_t, std::string> at_seq;
    {
      Agent a(w, "all", 0, options);
      at_seq[a.run.seq()] = a.dump();
      std::string last = at_seq.rbegin()->second;
      json in_doubt = json::object();  // the calls of the turn in progress whose intended entry is committed
      w.on_tool = [&] {
        // The journal now holds the state before the turn plus its calls marked intended.
        const auto entries = w.journal->read("acme", "all", a.run.seq(), a.run.seq());
        REQUIRE(entries.size() == 1);
        REQUIRE(entries[0].kind == "context.tool_intended");
        in_doubt[entries[0].data["call"].get<std::string>()] = entries[0].data;
        const auto nl = last.find('\n');
        json ctx = json::parse(last.substr(0, nl));
        for (const auto& [id, call] : in_doubt.items()) ctx["calls"][id] = call;
        at_seq[a.run.seq()] = ctx.dump() + last.substr(nl);
      };
      std::mt19937 rng(11);
      for (std::size_t i = 0; i < cairn_test::feature_steps + 2; ++i) {
        if (i < conversation.size()) a.engine.handle(conversation[i]);
        at_seq[a.run.seq()] = last = a.dump();
        in_doubt = json::object();
        cairn_test::feature_step(a.machine, i);
        at_seq[a.run.seq()] = last = a.dump();
        for (int k = 0; k < 2; ++k) {
          a.tally.add(std::string(1 + rng() % 30, static_cast<char>('a' + i)));
          at_seq[a.run.seq()] = last = a.dump();
        }
        a.ctx.add_message(said(Role::assistant, "round " + std::to_string(i), static_cast<std::int64_t>(i)));
        at_seq[a.run.seq()] = last = a.dump();
      }
      REQUIRE(w.bookings->size() == 1);
      REQUIRE(a.machine.status().status == WorkflowStatus::complete);
    }
    INFO("factor " << factor);
    const auto entries = w.journal->read("acme", "all");
    if (factor > 0 && factor < 1) {
      CHECK(count_kind(entries, "goals.state") > 1);
      CHECK(count_kind(entries, "workflow.state") > 1);
      CHECK(count_kind(entries, "tally.state") > 1);
    }
    if (factor == 0) {
      CHECK(count_kind(entries, "goals.state") == 1);
      CHECK(count_kind(entries, "workflow.state") == 1);
      CHECK(count_kind(entries, "goals.patch") > 5);
      CHECK(count_kind(entries, "workflow.patch") > 5);
    }
    CHECK(count_kind(entries, "context.state") == 1);
    CHECK(count_kind(entries, snapshot_kind) == 0);
    // Every seq (with frequent checkpoints; the default factor at the cut points below): the states a crash can
    // leave compare whole; the others (inside one append) restore cleanly.
    std::size_t compared = 0;
    for (std::uint64_t seq = 1; factor < 1 && seq <= entries.size(); ++seq) {
      INFO("seq " << seq << " (" << entries[seq - 1].kind << ")");
      Agent b(w, "all", seq, options);
      CHECK(b.run.loaded_entries() == 0);  // every participant attached: what the restore read is released
      const auto it = at_seq.find(seq);
      if (it == at_seq.end()) continue;
      CHECK(b.dump() == it->second);
      ++compared;
    }
    if (factor < 1) CHECK(compared == at_seq.size());
    // Random truncation points: the journal cut there (a fork of it) resumes live, whole, and goes on.
    std::mt19937 rng(static_cast<unsigned>(factor * 100));
    std::vector<std::uint64_t> points;
    for (const auto& [seq, dump] : at_seq) points.push_back(seq);
    for (int round = 0; round < (factor < 1 ? 6 : 16); ++round) {
      const std::uint64_t seq = points[rng() % points.size()];
      const std::string id = "cut-" + std::to_string(round) + "-" + std::to_string(seq);
      w.journal->fork("acme", "all", seq, id);
      Agent c(w, id, 0, options);
      INFO("cut at " << seq);
      CHECK(c.dump() == at_seq[seq]);
      c.tally.add("after the cut");
      Agent d(w, id, 0, options);
      CHECK(d.dump() == c.dump());
    }
  }
}

TEST_CASE(
    "a run releases what it read once every participant in it is attached, one attached again later is "
    "rebuilt from the journal as it is now") {
  Fixture f;
  {
    Run run(f.journal, "acme", "r");
    ExecutionContext ctx(f.store, "acme");
    Tally tally;
    ctx.attach(run);
    tally.attach(run);
    ctx.add_message(said(Role::user, "hello", 1));
    tally.add("a");
  }
  Run run(f.journal, "acme", "r");
  CHECK(run.loaded_entries() == 4);  // context.state, tally.state, the message, the add
  ExecutionContext ctx(f.store, "acme");
  ctx.attach(run);
  CHECK(run.loaded_entries() == 4);  // the tally's entries are still needed
  auto tally = std::make_unique<Tally>();
  tally->attach(run);
  CHECK(run.loaded_entries() == 0);
  CHECK(tally->participant_state() == json{{"items", {"a"}}, {"total", 1}});
  ctx.add_message(said(Role::assistant, "hi", 2));
  tally->add("bc");
  const json live = tally->participant_state();
  CHECK(live == json{{"items", {"a", "bc"}}, {"total", 3}});
  tally.reset();  // detaches
  Tally again;
  again.attach(run);  // read from the journal again: with "bc", recorded after the run was opened
  CHECK(again.participant_state() == live);
  CHECK(run.loaded_entries() == 0);
  again.add("d");
  Run reopened(f.journal, "acme", "r");
  Tally last;
  last.attach(reopened);
  CHECK(last.participant_state() == again.participant_state());
}
