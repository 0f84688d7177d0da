// fleet_worker — one worker of the random-time fleet kill test (tests/run/fleet_kill_test.cpp, docs/runs.md "The
// fleet test"). It runs, or resumes, one complete scripted run with every kind of participant attached to one Run:
// an ExecutionContext, a GoalEngine with tool-using goals (the train-booking SOP, a rule-based interpreter), a
// WorkflowMachine (action, loop and ralph steps) and a RunParticipant of its own (the host's script position). The
// script makes 14 tool calls, 5 of them not idempotent; every call's real effect is a line appended, with its
// idempotency key, to an outside ledger (a file opened O_APPEND and fsynced). Everything is deterministic: a fixed
// clock everywhere, ids the host chooses where it chooses them.
//
//   cairn_fleet_worker <url> <run-id> <ledger-file> [--snapshot-every N] [--call-lease MS]
//
// On success it prints one line `final <json>`: the whole state of every participant and every version of every
// artifact of the run's tenant, nothing stripped. A journal conflict (another worker moved the run on) makes it
// drop everything and reopen the run, as docs/runs.md tells a host to; a call in flight (claimed by another worker
// less than the call lease ago, RunOptions::call_lease, default here 1000 ms) makes it wait until the lease ends,
// then reopen. Exit 0 when the run is complete, 2 on error.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cairn/cairn.hpp"
#include "cairn/goals/engine.hpp"
#include "cairn/goals/sop.hpp"
#include "cairn/run/run.hpp"
#include "cairn/store/open_store.hpp"
#include "cairn/testing/clock.hpp"
#include "cairn/workflow/machine.hpp"

namespace {

using nlohmann::json;

constexpr std::int64_t fixed_time_ms = 1767225600000;  // 2026-01-01T00:00:00Z, for every clock of every layer

struct Args {
  std::string url;
  std::string run_id;
  std::string ledger;
  std::size_t snapshot_every = 8;
  std::chrono::milliseconds call_lease{1000};  // far above a tool's run time here (a few ms, fsync included)
};
Args args;

// ---- the outside ledger -------------------------------------------------------------------------------------------

// One line per real effect: `<key>\t<tool>\t<outputs json>`. Appended with O_APPEND and fsynced before the tool
// returns, so an effect the ledger holds happened whatever happens to the worker afterwards.
void ledger_append(const std::string& key, const std::string& tool, const json& outputs) {
  const int fd = ::open(args.ledger.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open the ledger " + args.ledger);
  const std::string line = key + "\t" + tool + "\t" + outputs.dump() + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write the ledger " + args.ledger);
}

// The outputs the ledger holds for `key`, if its effect happened.
std::optional<json> ledger_find(const std::string& key) {
  std::FILE* f = std::fopen(args.ledger.c_str(), "r");
  if (!f) return std::nullopt;
  std::optional<json> found;
  std::string line;
  for (int c; (c = std::fgetc(f)) != EOF;) {
    if (c != '\n') {
      line.push_back(static_cast<char>(c));
      continue;
    }
    const auto tab = line.find('\t');
    if (line.compare(0, tab, key) == 0 && tab == key.size()) found = json::parse(line.substr(line.rfind('\t') + 1));
    line.clear();
  }
  std::fclose(f);
  return found;
}

// ---- tools ----------------------------------------------------------------------------------------------------------

void add_tool(cairn::ToolRegistry& tools, const std::string& name, bool idempotent, json schema,
              std::function<json(const json&)> f) {
  // The effect goes to the ledger under the call's idempotency key (ToolInvocation), as it would to a payment API.
  cairn::Tool t{name, name, std::move(schema), [name, f](const json& in, const cairn::ToolInvocation& call) {
                  json out = f(in);
                  ledger_append(call.idempotency_key, name, out);
                  return cairn::ToolResult::ok(std::move(out));
                }};
  t.idempotent = idempotent;
  tools.add(std::move(t));
}

void add_tools(cairn::ToolRegistry& tools) {
  const json any = {{"type", "object"}};
  auto text = [](const json& in, const char* key) { return in.at(key).dump(); };
  // The context's own calls.
  add_tool(tools, "fetch", true, any,
           [](const json& in) { return json("page of " + in.at("url").get<std::string>()); });
  add_tool(tools, "summarize", true, any, [text](const json& in) { return json("summary of " + text(in, "text")); });
  add_tool(tools, "translate", true, any, [text](const json& in) { return json("fr: " + text(in, "text")); });
  add_tool(tools, "publish", false, any, [text](const json& in) {
    return json{{"published", text(in, "text")}, {"url", "https://blog.example/2-0"}};
  });
  add_tool(tools, "send-email", false, any, [](const json& in) {
    return json{{"message_id", "msg-" + in.at("to").get<std::string>()}, {"sent", true}};
  });
  // The goal engine's (the train-booking SOP names them).
  add_tool(tools, "train-search-api", true,
           json::parse(R"({"type": "object", "properties": {"origin": {"type": "string"},
             "destination": {"type": "string"}, "date": {"type": "string"}},
             "required": ["origin", "destination", "date"]})"),
           [](const json& in) {
             const std::string d = in.at("date").get<std::string>();
             return json::array({{{"id", "ES9014-" + d}, {"departs", "09:01"}, {"price", 89}},
                                 {{"id", "ES9024-" + d}, {"departs", "10:31"}, {"price", 64}}});
           });
  add_tool(tools, "train-booking-api", false,
           json::parse(R"({"type": "object", "properties": {"selectedTrain": {"type": "object"}},
             "required": ["selectedTrain"]})"),
           [](const json& in) {
             return json{{"reference", "CRN-" + in.at("selectedTrain").at("id").get<std::string>()},
                         {"train", in.at("selectedTrain")}};
           });
  // The workflow's.
  add_tool(tools, "build", true, any,
           [](const json& in) { return json("built " + in.at("version").get<std::string>()); });
  add_tool(tools, "package", true, any,
           [](const json& in) { return json("package " + in.at("task").get<std::string>()); });
  add_tool(tools, "deploy", false, any, [text](const json& in) { return json{{"deployed", text(in, "what")}}; });
  add_tool(tools, "smoke-test", true, any, [text](const json& in) { return json{{"passed", text(in, "what")}}; });
}

// ---- the goal engine's host parts ---------------------------------------------------------------------------------

// "new: <gloss>" and "ev: <key> = <json or text>"; anything else continues the conversation.
struct TextInterpreter final : cairn::MessageInterpreter {
  cairn::Interpretation interpret(const std::string& m, const cairn::Goal*, const json&) override {
    if (m.rfind("new: ", 0) == 0) return cairn::Interpretation::new_goal(m.substr(5));
    if (m.rfind("ev: ", 0) == 0) {
      const auto eq = m.find(" = ");
      const std::string value = m.substr(eq + 3);
      json v = json::parse(value, nullptr, false);
      return cairn::Interpretation::add_evidence(m.substr(4, eq - 4), v.is_discarded() ? json(value) : v);
    }
    return cairn::Interpretation::continue_conversation();
  }
};

std::shared_ptr<cairn::SopPlanner> train_planner() {
  auto sops = std::make_shared<cairn::SopRegistry>();
  sops->load_file(std::string(CAIRN_SOURCE_DIR) + "/examples/sops/train-booking.json");
  return std::make_shared<cairn::SopPlanner>(sops);
}

// ---- the host's own participant -------------------------------------------------------------------------------------

// Where the host is in its script, and a note per step done. Recorded before it changes, like cairn's own.
class Host final : public cairn::RunParticipant {
 public:
  ~Host() override {
    if (run_) run_->detach(*this);
  }
  void attach(cairn::Run& run) {
    run.attach(*this);
    run_ = &run;
  }
  std::size_t step() const { return step_; }
  void advance(const std::string& note) {
    if (run_) run_->record("host", "step", json{{"step", step_ + 1}, {"note", note}});
    ++step_;
    notes_.push_back(note);
  }

  std::string participant_name() const override { return "host"; }
  json participant_state() const override { return json{{"step", step_}, {"notes", notes_}}; }
  void restore_participant(const json& state) override {
    step_ = state.at("step").get<std::size_t>();
    notes_ = state.at("notes").get<std::vector<std::string>>();
  }
  void apply_participant_entry(std::string_view kind, const cairn::JournalEntry& e) override {
    if (kind != "step") throw cairn::state_error("host: unknown entry kind host." + std::string(kind));
    step_ = e.data.at("step").get<std::size_t>();
    notes_.push_back(e.data.at("note").get<std::string>());
  }
  void participant_detached() noexcept override { run_ = nullptr; }

 private:
  cairn::Run* run_ = nullptr;
  std::size_t step_ = 0;
  std::vector<std::string> notes_;
};

// ---- the script -----------------------------------------------------------------------------------------------------

const char* release_workflow = R"({
  "name": "release",
  "description": "Build, package each part, deploy",
  "loops": {"ship": [
    {"id": "package", "instructions": "Package {task.title}"},
    {"id": "check", "instructions": "Check the package of {task.title}", "on_fail": "retry"}
  ]},
  "steps": [
    {"id": "build", "type": "action", "instructions": "Build the release."},
    {"id": "plan", "type": "action", "instructions": "List the parts to ship."},
    {"id": "ship", "type": "loop"},
    {"id": "deploy", "type": "ralph", "n": 2, "instructions": "Deploy, then smoke-test."}
  ]
})";

struct Worker {
  std::shared_ptr<cairn::ArtifactStore> store;
  std::shared_ptr<cairn::RunJournal> journal;
  std::shared_ptr<cairn::Clock> clock = std::make_shared<cairn::testing::ManualClock>(fixed_time_ms);
  cairn::ToolRegistry tools;
  std::shared_ptr<cairn::SopPlanner> planner = train_planner();

  // The host's in-doubt policy for a tool that is not idempotent (idempotent ones are retried without asking): it
  // looks for the call's idempotency key in the outside ledger. There: the call happened, recorded as done with the
  // ledger's outputs; not there: it never happened, retried (the retry is claimed in the journal first).
  static cairn::InDoubtAction in_doubt(const cairn::RecordedCall& c) {
    if (auto outputs = ledger_find(cairn::detail::call_key(args.run_id, args.run_id, c.call_id))) {
      return cairn::InDoubtAction::done(cairn::ToolResult::ok(std::move(*outputs)));
    }
    return cairn::InDoubtAction::retry();
  }
  static cairn::ExecuteOptions execute_options() {
    cairn::ExecuteOptions o;
    o.in_doubt = in_doubt;
    return o;
  }

  static cairn::ToolCall call(std::string id, std::string tool, json inputs, std::string out) {
    cairn::ToolCall c;
    c.id = std::move(id);
    c.tool = std::move(tool);
    c.inputs = std::move(inputs);
    c.outputs = {cairn::OutputSpec{out, cairn::ArtifactType::data, "output of " + c.id, ""}};
    return c;
  }

  // The whole state, nothing stripped: every participant and every version of every artifact of the tenant.
  json final_state(const cairn::ExecutionContext& ctx, const cairn::GoalEngine& engine,
                   const cairn::WorkflowMachine& machine, const Host& host) const {
    json artifacts = json::array();
    cairn::ListQuery q;
    q.limit = cairn::ListQuery::max_limit;
    for (;;) {
      const auto page = store->list(args.run_id, q);
      for (const auto& latest : page.items) {
        for (const auto v : store->versions(latest->id(), args.run_id)) {
          artifacts.push_back(json(*store->fetch(latest->id(), args.run_id, v)));
        }
      }
      if (!page.next_cursor) break;
      q.cursor = *page.next_cursor;
    }
    return json{{"context", ctx.state()},
                {"goals", engine.to_json()},
                {"workflow", machine.to_json()},
                {"host", host.participant_state()},
                {"artifacts", artifacts}};
  }

  // One session: opens the run, attaches everything, does what is left of the script. A cairn::conflict thrown
  // from here means another worker moved the run on.
  json session() {
    const std::string tenant = args.run_id;  // one tenant per run: the run's artifacts are the tenant's
    cairn::RunOptions run_options;
    run_options.snapshot_every = args.snapshot_every;
    run_options.call_lease = args.call_lease;
    cairn::Run run(journal, tenant, args.run_id, run_options);
    cairn::ExecutionContext ctx(store, tenant, clock);
    ctx.attach(run);
    cairn::GoalEngineOptions engine_options;
    engine_options.clock = clock;
    engine_options.in_doubt = in_doubt;
    cairn::GoalEngine engine(ctx, tools, {std::make_shared<TextInterpreter>(), planner}, engine_options);
    engine.attach(run);
    cairn::WorkflowMachine machine(cairn::WorkflowTemplate::parse(release_workflow), "/nonexistent-fleet-workspace");
    machine.attach(run);
    Host host;
    host.attach(run);
    const auto opts = execute_options();

    auto run_call = [&](const cairn::ToolCall& c) {
      const auto r = cairn::execute(c, ctx, tools, opts);
      if (!r.success) throw std::runtime_error(c.id + " failed: " + r.error);
      return ctx.get_artifact_value(c.outputs.at(0).name)->dump();
    };
    // Each step of the script and the host's note of it are one batch: all or nothing (a tool's intended entry is
    // committed before the tool runs, whatever the batch).
    const std::vector<std::pair<std::string, std::function<void()>>> script = {
        {"brief",
         [&] {
           ctx.add_message(cairn::Role::user, "Ship release 2.0 and tell the team.");
           ctx.add_artifact("brief", cairn::ArtifactRecord::builder()
                                         .id("brief-" + args.run_id)
                                         .type(cairn::ArtifactType::data)
                                         .description("What the release is")
                                         .value(json{{"version", "2.0"}, {"team", "core"}}));
         }},
        {"fetch",
         [&] {
           run_call(call("c-fetch", "fetch", {{"url", "https://example.com/changelog"}}, "page"));
         }},
        {"summarize",
         [&] {
           run_call(call("c-summarize", "summarize", {{"text", "@page"}}, "summary"));
         }},
        {"translate",
         [&] {
           run_call(call("c-translate", "translate", {{"text", "@summary"}}, "summary_fr"));
         }},
        {"publish",
         [&] {
           run_call(call("c-publish", "publish", {{"text", "@summary_fr"}}, "post"));
         }},
        {"email",
         [&] {
           run_call(call("c-email", "send-email", {{"to", "team"}, {"post", "@post"}}, "email"));
         }},
        {"reply", [&] { ctx.add_message(cairn::Role::assistant, "Published and mailed; now the trains."); }},
        {"paris-1", [&] { engine.handle("new: Find me a train to Paris"); }},
        {"paris-2", [&] { engine.handle("ev: origin = London"); }},
        {"paris-3", [&] { engine.handle("ev: destination = Paris"); }},
        {"paris-4", [&] { engine.handle("ev: date = 2026-03-01"); }},
        {"paris-5", [&] { engine.handle(R"(ev: selectedTrain = {"id": "ES9024-2026-03-01", "departs": "10:31"})"); }},
        {"paris-6", [&] { engine.handle("ev: confirmation = yes"); }},
        {"lyon-1", [&] { engine.handle("new: Find me a train to Lyon"); }},
        {"lyon-2", [&] { engine.handle("ev: origin = Paris"); }},
        {"lyon-3", [&] { engine.handle("ev: destination = Lyon"); }},
        {"lyon-4", [&] { engine.handle("ev: date = 2026-03-04"); }},
        {"lyon-5", [&] { engine.handle(R"(ev: selectedTrain = {"id": "ES9014-2026-03-04", "departs": "09:01"})"); }},
        {"lyon-6", [&] { engine.handle("ev: confirmation = yes"); }},
        {"wf-start", [&] { machine.start("Release 2.0"); }},
        {"wf-build",
         [&] {
           machine.advance(run_call(call("w-build", "build", {{"version", "2.0"}}, "build")));
         }},
        {"wf-plan",
         [&] {
           machine.set_tasks("ship", {{"cli", "CLI", "the command line", {}, {}}, {"lib", "Library", {}, {"cli"}, {}}});
           machine.advance("two parts");
         }},
        {"wf-package-cli",
         [&] {
           machine.advance(run_call(call("w-package-cli", "package", {{"task", "cli"}}, "pkg_cli")));
         }},
        {"wf-check-cli-fails", [&] { machine.advance("checksum wrong", cairn::StepResult::failed); }},
        {"wf-check-cli", [&] { machine.advance("cli ok"); }},
        {"wf-package-lib",
         [&] {
           machine.advance(run_call(call("w-package-lib", "package", {{"task", "lib"}}, "pkg_lib")));
         }},
        {"wf-check-lib", [&] { machine.advance("lib ok"); }},
        {"wf-deploy",
         [&] {
           machine.advance(run_call(call("w-deploy", "deploy", {{"what", "@build"}}, "deployment")));
         }},
        {"wf-smoke",
         [&] {
           machine.advance(run_call(call("w-smoke", "smoke-test", {{"what", "@deployment"}}, "smoke")));
         }},
        {"done", [&] { ctx.add_message(cairn::Role::assistant, "Release 2.0 is out; two trains booked."); }},
    };
    while (host.step() < script.size()) {
      auto group = run.batch();
      const auto& [note, body] = script[host.step()];
      body();
      host.advance(note);
      group.commit();
    }
    return final_state(ctx, engine, machine, host);
  }
};

std::shared_ptr<cairn::ArtifactStore> open_fixed_clock_store(const std::string& url,
                                                             const std::shared_ptr<cairn::Clock>& clock) {
  const auto parsed = cairn::detail::parse_store_url(url, "fleet_worker");
  if (parsed.backend == cairn::detail::StoreUrl::Backend::sqlite) {
    cairn::SqliteOptions o;
    o.clock = clock;
    return std::make_shared<cairn::SqliteArtifactStore>(parsed.target, o);
  }
#if defined(CAIRN_HAS_POSTGRES)
  if (parsed.backend == cairn::detail::StoreUrl::Backend::postgres) {
    cairn::PostgresOptions o;
    o.clock = clock;
    return std::make_shared<cairn::PostgresArtifactStore>(parsed.target, o);
  }
#endif
  throw std::invalid_argument("fleet_worker: needs a sqlite: or postgres: URL");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::string> a(argv + 1, argv + argc);
    if (a.size() < 3) {
      throw std::invalid_argument(
          "usage: cairn_fleet_worker <url> <run-id> <ledger> [--snapshot-every N] [--call-lease MS]");
    }
    args.url = a[0];
    args.run_id = a[1];
    args.ledger = a[2];
    for (std::size_t i = 3; i + 1 < a.size(); i += 2) {
      if (a[i] == "--snapshot-every") {
        args.snapshot_every = std::stoul(a[i + 1]);
      } else if (a[i] == "--call-lease") {
        args.call_lease = std::chrono::milliseconds(std::stol(a[i + 1]));
      } else {
        throw std::invalid_argument("unknown argument " + a[i]);
      }
    }
    Worker w;
    add_tools(w.tools);
    w.store = open_fixed_clock_store(args.url, w.clock);
    w.journal = cairn::open_run_journal(args.url);
    for (int attempt = 1;; ++attempt) {
      try {
        const json state = w.session();
        std::cout << "final " << state.dump() << std::endl;
        return 0;
      } catch (const cairn::call_in_flight& e) {
        // Another worker claimed a call less than the lease ago and may be running it: wait for the lease to end
        // (by the journal's clock, the system's here), then reopen the run, which then holds its outcome or holds it
        // in doubt.
        const std::int64_t wait = e.lease_ends_at() - w.journal->now_ms();
        std::cerr << "fleet_worker: call in flight (" << e.what() << "), waiting " << wait << " ms\n";
        if (wait > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait + 1));
        if (attempt >= 1000) throw;
      } catch (const cairn::conflict& e) {
        // Another worker appended first: this worker's objects are stale. Reopen the run and carry on.
        std::cerr << "fleet_worker: conflict (" << e.what() << "), reopening the run\n";
        if (attempt >= 1000) throw;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "fleet_worker: " << e.what() << '\n';
    return 2;
  }
}
