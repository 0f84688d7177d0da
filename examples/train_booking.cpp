// train_booking — a goal-driven conversation (seed 002 §8.1 and §13.1) planned from a standard operating procedure.
//
// "Find me a train to Paris" becomes a goal; the SopPlanner matches it to examples/sops/train-booking.json and
// splits it into: gather origin, destination and date, search the timetable (a tool), present the trains, ask which
// one, confirm, book it (a tool) and show the reference. A second run shows a user giving up half-way, and a goal no
// SOP covers, planned by the host as an OR of two services where the first one is down.
//
// The interpreter is a few rules written here (no model): a real host would pass its LLM to cairn::ModelInterpreter.
//
// Usage: train_booking [--trace] [sop-file] [output-dir]   (output-dir receives the goal trees as Graphviz .dot files;
// --trace prints one line per event cairn reports: store calls, resolutions, tool calls, goal transitions)
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/prompt.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/goals/dot.hpp"
#include "cairn/goals/engine.hpp"
#include "cairn/goals/sop.hpp"
#include "cairn/observe.hpp"

using nlohmann::json;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- the host's interpreter: rules instead of a model ---------------------------------------------------------------

class TravelDeskInterpreter : public cairn::MessageInterpreter {
 public:
  cairn::Interpretation interpret(const std::string& message, const cairn::Goal* current,
                                  const json& evidence) override {
    const std::string text = lower(message);
    for (const char* quit : {"forget it", "never mind", "cancel", "stop"}) {
      if (contains(text, quit)) return cairn::Interpretation::abandon_goal();
    }
    if (!current || text.rfind("find", 0) == 0 || text.rfind("look up", 0) == 0 || text.rfind("book", 0) == 0) {
      json context = json::object();
      if (const auto in = message.find(" in "); in != std::string::npos) context["city"] = message.substr(in + 4);
      return cairn::Interpretation::new_goal(message, context);
    }
    const auto& args = current->predicate.args;
    if (current->predicate.name == cairn::Predicate::confirm) {
      return cairn::Interpretation::add_evidence(args.value("key", "confirmation"), message);
    }
    if (current->predicate.name != cairn::Predicate::gather_info) return cairn::Interpretation::continue_conversation();
    const std::string key = args.value("key", "");
    if (key == "selectedTrain") {  // "the 10:31" or "ES9024": pick it from the timetable the goal can see
      for (const auto& train : evidence.value("trainList", json::array())) {
        if (contains(message, train["departs"].get<std::string>()) ||
            contains(message, train["id"].get<std::string>())) {
          return cairn::Interpretation::add_evidence(key, train);
        }
      }
      return cairn::Interpretation::continue_conversation();
    }
    return cairn::Interpretation::add_evidence(key, message);
  }
};

// ---- the host's fallback planner, for goals no SOP covers ---------------------------------------------------------

class WeatherPlanner : public cairn::GoalPlanner {
 public:
  cairn::GoalPlan plan(const cairn::Goal& goal, const json&) override {
    if (!contains(lower(goal.gloss), "weather")) throw cairn::not_found("I only know trains and weather");
    auto spec = [](std::string gloss, cairn::Predicate p) {
      cairn::SubgoalSpec s;
      s.gloss = std::move(gloss);
      s.predicate = std::move(p);
      return s;
    };
    cairn::GoalPlan plan;
    plan.source = "weather-desk";
    auto fetch = spec("Fetch the forecast", {"composite", json::object()});
    fetch.id = "fetch";
    fetch.kind = cairn::Decomposition::Kind::any;  // OR: the first service that answers
    auto primary =
        spec("Ask the primary weather service", {"use_tool", {{"tool", "weather-primary"}, {"output", "forecast"}}});
    primary.parent = "fetch";
    auto backup =
        spec("Ask the backup weather service", {"use_tool", {{"tool", "weather-backup"}, {"output", "forecast"}}});
    backup.parent = "fetch";
    plan.subgoals = {fetch, primary, backup, spec("The forecast", {"present_info", {{"key", "forecast"}}})};
    return plan;
  }
};

// ---- in-process tools ----------------------------------------------------------------------------------------------

void add_tools(cairn::ToolRegistry& tools) {
  tools.add(
      {"train-search-api", "Searches the timetable",
       json::parse(R"({"type": "object", "properties": {"origin": {"type": "string"},
               "destination": {"type": "string"}, "date": {"type": "string"}, "passengers": {"type": "number"}},
               "required": ["origin", "destination", "date"]})"),
       [](const json& in) {
         json trains = json::array();
         const std::string route =
             in["origin"].get<std::string>().substr(0, 1) + in["destination"].get<std::string>().substr(0, 1);
         int n = 0;
         for (const auto& [departs, arrives, price] :
              {std::tuple{"07:01", "10:20", 119}, std::tuple{"09:01", "12:20", 89}, std::tuple{"10:31", "13:47", 64}}) {
           trains.push_back({{"id", fmt::format("{}90{}4", route, ++n)},
                             {"departs", departs},
                             {"arrives", arrives},
                             {"price", price}});
         }
         return cairn::ToolResult::ok(trains, {{"date", in["date"]}});
       }});
  tools.add({"train-booking-api", "Books a seat on a train",
             json::parse(R"({"type": "object", "properties": {"selectedTrain": {"type": "object"},
               "date": {"type": "string"}}, "required": ["selectedTrain", "date"]})"),
             [](const json& in) {
               std::string day = in["date"].get<std::string>();
               day.erase(std::remove(day.begin(), day.end(), '-'), day.end());
               const std::string reference =
                   fmt::format("CRN-{}-{}", in["selectedTrain"]["id"].get<std::string>(), day);
               return cairn::ToolResult::ok({{"reference", reference},
                                             {"train", in["selectedTrain"]["id"]},
                                             {"departs", in["selectedTrain"]["departs"]},
                                             {"date", in["date"]}});
             }});
  tools.add({"weather-primary", "Forecasts (primary service)",
             json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})"),
             [](const json&) { return cairn::ToolResult::failure("service unavailable (HTTP 503)"); }});
  tools.add(
      {"weather-backup", "Forecasts (backup service)",
       json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})"),
       [](const json& in) {
         return cairn::ToolResult::ok({{"city", in["city"]}, {"today", "sunny, 21°C"}, {"tomorrow", "showers, 17°C"}});
       }});
}

// A timetable reads better as a table than as JSON.
std::string present(const cairn::Goal& goal, const json& value) {
  if (value.is_array() && !value.empty() && value[0].contains("departs")) {
    std::string out = cairn::presentation_heading(goal) + ":";
    for (const auto& t : value) {
      out += fmt::format("\n  {}  {} -> {}  EUR {}", t["id"].get<std::string>(), t["departs"].get<std::string>(),
                         t["arrives"].get<std::string>(), t["price"].get<int>());
    }
    return out;
  }
  return cairn::default_presentation(goal, value);
}

// ---- printing ------------------------------------------------------------------------------------------------------

void print_tree(const cairn::GoalStack& goals, const cairn::Goal& g, int depth) {
  std::string line = fmt::format("{}[{}] {} ({}", std::string(static_cast<std::size_t>(depth) * 2, ' '),
                                 cairn::to_string(g.status), g.gloss, g.predicate.name);
  if (g.decomposition) line += fmt::format(", {}", cairn::to_string(g.decomposition->kind));
  line += ")";
  if (g.status == cairn::GoalStatus::abandoned || g.status == cairn::GoalStatus::blocked) line += " - " + g.reason;
  std::cout << line << '\n';
  if (!g.decomposition) return;
  for (const std::string& c : g.decomposition->children) print_tree(goals, *goals.find(c), depth + 1);
}

void print_goals(const cairn::GoalStack& goals) {
  std::cout << "\n== goal tree\n";
  for (const cairn::Goal& g : goals.goals()) {
    if (g.is_root()) print_tree(goals, g, 0);
  }
}

std::vector<std::string> play(cairn::GoalEngine& engine, const std::vector<std::string>& script) {
  std::vector<std::string> all;
  for (const std::string& message : script) {
    std::cout << "\nuser:      " << message << '\n';
    for (const std::string& reply : engine.handle(message)) {
      std::string shown = reply;
      for (std::size_t at = shown.find('\n'); at != std::string::npos; at = shown.find('\n', at + 1)) {
        shown.insert(at + 1, "           ");
      }
      std::cout << "assistant: " << shown << '\n';
      all.push_back(reply);
    }
  }
  return all;
}

void write_dot(const cairn::GoalStack& goals, const std::filesystem::path& path, const std::string& name) {
  std::ofstream(path) << cairn::to_dot(goals, name);
  std::cout << "\nwrote the goal tree to " << path.string() << " (render: dot -Tsvg " << path.filename().string()
            << " > goals.svg)\n";
}

// ---- --trace: an observer that prints one line per event ----------------------------------------------------------

// Observers may be called from several threads at once; this one writes whole lines under a lock.
class TracePrinter : public cairn::Observer {
 public:
  void on_event(const cairn::Event& e) noexcept override {
    std::string line =
        fmt::format("trace: {} {} '{}' {:.3f}ms in={}B out={}B items={}", cairn::to_string(e.kind), e.operation,
                    e.subject, static_cast<double>(e.duration.count()) / 1e6, e.bytes_in, e.bytes_out, e.items);
    if (e.goal) line += fmt::format(" ({})", e.goal->gloss);
    if (e.failed()) line += fmt::format(" FAILED {}: {}", cairn::to_string(e.error), e.message);
    std::lock_guard<std::mutex> lock(mutex_);
    std::cout << line << '\n';
  }

 private:
  std::mutex mutex_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool trace = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--trace") {
      trace = true;
    } else {
      args.emplace_back(argv[i]);
    }
  }
  // Default: the SOP next to this source file, so the example works from any working directory.
  const std::string sop_file =
      !args.empty() ? args[0]
                    : (std::filesystem::path(__FILE__).parent_path() / "sops" / "train-booking.json").string();
  const std::filesystem::path out_dir =
      args.size() > 1 ? std::filesystem::path(args[1]) : std::filesystem::temp_directory_path();
  // Null unless --trace: then cairn times and reports nothing at all.
  const std::shared_ptr<cairn::Observer> tracer = trace ? std::make_shared<TracePrinter>() : nullptr;

  auto sops = std::make_shared<cairn::SopRegistry>();
  try {
    sops->load_file(sop_file);
  } catch (const cairn::error& e) {
    std::cerr << "train_booking: " << e.what() << "\n(usage: train_booking [--trace] [sop-file] [output-dir])\n";
    return 2;
  }
  cairn::ToolRegistry tools;
  add_tools(tools);
  std::shared_ptr<cairn::ArtifactStore> store = std::make_shared<cairn::InMemoryArtifactStore>();
  if (tracer) store = cairn::observed(store, tracer);  // every store call, whatever the backend
  auto interpreter = std::make_shared<TravelDeskInterpreter>();
  cairn::SopPlannerOptions planning;
  planning.fallback = std::make_shared<WeatherPlanner>();
  auto planner = std::make_shared<cairn::SopPlanner>(sops, planning);
  std::size_t transitions = 0;
  cairn::GoalEngineOptions options;
  options.presenter = present;
  options.observer = [&transitions](const cairn::GoalTransition&) { ++transitions; };
  options.event_observer = tracer;  // goal transitions

  // ---- run 1: the whole booking -----------------------------------------------------------------------------------
  std::cout << "=== run 1: booking a train, planned by the SOP '" << sops->list().front()->title << "'\n";
  cairn::ExecutionContext ctx(store, "travel-desk");
  ctx.set_observer(tracer);  // resolutions and tool calls
  cairn::GoalEngine engine(ctx, tools, {interpreter, planner}, options);
  play(engine, {"Find me a train to Paris", "London", "Paris", "2025-10-01", "The 10:31 please", "yes"});

  const cairn::Goal& root = *engine.goals().find("g1");
  std::cout << "\n== evidence of '" << root.gloss << "'\n" << root.evidence.dump(2) << '\n';
  std::cout << "\n== artifacts\n" << cairn::format_artifacts_catalog(ctx) << '\n';
  print_goals(engine.goals());
  std::cout << "(" << transitions << " goal transitions observed)\n";
  write_dot(engine.goals(), out_dir / "train_booking.dot", "train_booking");

  // ---- run 2: giving up half-way, then an OR that falls back to its second alternative -----------------------------
  std::cout << "\n=== run 2: a user who gives up, then a goal no SOP covers\n";
  cairn::ExecutionContext ctx2(store, "travel-desk");
  ctx2.set_observer(tracer);
  cairn::GoalEngine second(ctx2, tools, {interpreter, planner}, options);
  play(second, {"Find me a train to Paris", "Leeds", "Actually, forget it", "Look up the weather in Paris"});
  print_goals(second.goals());
  write_dot(second.goals(), out_dir / "train_booking_fallback.dot", "fallback");

  // Check what the runs were meant to show, so that a regression fails the example.
  const bool booked = root.status == cairn::GoalStatus::achieved && root.evidence.contains("booking");
  const bool gave_up = second.goals().find("g1")->status == cairn::GoalStatus::abandoned;
  bool fell_back = false;
  bool forecast = false;
  for (const cairn::Goal& g : second.goals().goals()) {
    if (g.gloss == "Ask the backup weather service") fell_back = g.status == cairn::GoalStatus::achieved;
    if (g.is_root() && g.evidence.contains("forecast")) forecast = g.status == cairn::GoalStatus::achieved;
  }
  const bool ok = booked && gave_up && fell_back && forecast;
  if (!ok) {
    std::cout << "\ntrain_booking: FAILED\n";
    return 1;
  }
  std::cout << "\ntrain_booking: booked " << root.evidence["booking"]["reference"].get<std::string>()
            << "; abandon and OR fallback OK\n";
  return 0;
}
