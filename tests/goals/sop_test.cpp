// SOPs: reading (the showcase's file, and every malformed field), the verb table, done_when keys that the step's
// own action produces, the lexical match, a host matcher, the fallback planner for unmatched goals, and SOPs
// retrieved by search (words only, and words and meaning with a deterministic embedder).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cairn/artifact/search/rank.hpp"
#include "cairn/goals/sop.hpp"
#include "cairn/testing/embedder.hpp"
#include "catch.hpp"
#include "goals_test_support.hpp"

using cairn::Condition;
using cairn::Goal;
using cairn::Predicate;
using cairn::Sop;
using cairn::SopPlanner;
using cairn::SopRegistry;
using nlohmann::json;
using Strings = std::vector<std::string>;

namespace {

Goal goal(std::string gloss) {
  Goal g;
  g.id = "g1";
  g.gloss = std::move(gloss);
  return g;
}

std::shared_ptr<SopRegistry> registry() {
  auto r = std::make_shared<SopRegistry>();
  r->load_file(goals_test::source_path("examples/sops/train-booking.json"));
  r->add(Sop::parse(R"({"title": "Order a pizza", "intent": "Order food for delivery",
                        "steps": [{"gloss": "Ask which pizza"}]})"));
  return r;
}

std::string one_step(const std::string& step) { return R"({"id": "t", "title": "T", "steps": [)" + step + "]}"; }

}  // namespace

TEST_CASE("the showcase's SOP reads with its inputs in document order") {
  const auto r = registry();
  const auto sop = r->find("train-booking");
  REQUIRE(sop);
  REQUIRE(sop->title == "Book a train ticket");
  Strings names;
  for (const auto& i : sop->inputs) names.push_back(i.name);
  REQUIRE(names == Strings{"origin", "destination", "date", "passengers"});
  REQUIRE(sop->inputs[0].required);
  REQUIRE(sop->inputs[0].prompt == "Where are you travelling from?");
  REQUIRE_FALSE(sop->inputs[3].required);
  REQUIRE(sop->inputs[3].type == "number");
  REQUIRE(sop->steps.size() == 6);
  REQUIRE(r->find("order-a-pizza"));  // an id made from the title
  REQUIRE(r->size() == 2);
  REQUIRE(json(*sop)["inputs"]["date"]["required"] == true);
}

TEST_CASE("Sop::parse keeps the document order of inputs without ordered_json, from_json(ordered_json) still does") {
  // Keys of other objects, at the top level or deeper, do not disturb the order; a repeated input keeps its first
  // place (as nlohmann::ordered_json would) and its last value (as nlohmann::json does).
  const std::string text = R"({"title": "T", "meta": {"zeta": 1, "alpha": 2},
      "inputs": {"zulu": {"prompt": "Z?"}, "alpha": {"description": "a", "inner": {"yy": 1, "bb": 2}},
                 "mike": {}, "zulu": {"prompt": "Z again?"}, "bravo": {"required": false}},
      "steps": [{"gloss": "Ask for zulu", "done_when": ["zulu"], "inputs": {"q": 1, "a": 2}}]})";
  const Sop sop = Sop::parse(text);
  Strings names;
  for (const auto& i : sop.inputs) names.push_back(i.name);
  REQUIRE(names == Strings{"zulu", "alpha", "mike", "bravo"});
  REQUIRE(sop.inputs[0].prompt == "Z again?");
  REQUIRE_FALSE(sop.inputs[3].required);

  const Sop ordered = Sop::from_json(nlohmann::ordered_json::parse(text));
  names.clear();
  for (const auto& i : ordered.inputs) names.push_back(i.name);
  REQUIRE(names == Strings{"zulu", "alpha", "mike", "bravo"});

  const Sop sorted = Sop::from_json(json::parse(text));  // nlohmann::json sorts members
  names.clear();
  for (const auto& i : sorted.inputs) names.push_back(i.name);
  REQUIRE(names == Strings{"alpha", "bravo", "mike", "zulu"});
}

TEST_CASE("each step maps to a predicate by its verb, with done_when keys its own action produces") {
  const Sop sop = Sop::parse(R"({"id": "all", "title": "All verbs", "steps": [
      {"gloss": "Gather the passport number"},
      {"gloss": "Collect payment details", "done_when": ["card"]},
      {"gloss": "Search trains", "suggested_tools": ["train.search", "other"]},
      {"gloss": "Retrieve prices", "suggested_tools": ["prices"], "done_when": ["priceList"]},
      {"gloss": "Show the prices"},
      {"gloss": "Confirm the purchase"},
      {"gloss": "Verify the payment"},
      {"gloss": "Validate, then celebrate!"},
      {"gloss": "Book it"},
      {"gloss": "Display a summary"},
      {"gloss": "Execute the refund", "suggested_tools": ["refund"]},
      {"gloss": "Ask: seat?", "done_when": ["seat"]},
      {"gloss": "Call home", "suggested_tools": ["phone"]},
      {"gloss": "Present results"},
      {"gloss": "Confirm again", "done_when": ["ok2"], "prompt": "Sure?"},
      {"gloss": "Ask the seat", "prompt": "Window or aisle?"},
      {"gloss": "Verify the card", "prompt": "Is the card valid?"}]})");
  auto step = [&](std::size_t i) { return sop.step_goal(i); };

  REQUIRE(step(0).predicate == Predicate{"gather_info", {{"key", "passport_number"}}});
  REQUIRE(step(0).done_when == std::vector<Condition>{Condition::has_evidence("passport_number")});
  REQUIRE(step(1).predicate == Predicate{"gather_info", {{"key", "card"}}});
  REQUIRE(step(2).predicate == Predicate{"use_tool", {{"tool", "train.search"}, {"output", "train_search"}}});
  REQUIRE(step(2).done_when == std::vector<Condition>{Condition::has_evidence("train_search")});
  REQUIRE(step(2).provenance ==
          json{{"sop_id", "all"}, {"sop_title", "All verbs"}, {"step_index", 2}, {"suggested_tool", "train.search"}});
  REQUIRE(step(3).predicate == Predicate{"use_tool", {{"tool", "prices"}, {"output", "priceList"}}});
  REQUIRE(step(4).predicate == Predicate{"present_info", {{"key", "priceList"}}});  // the latest tool step's key
  REQUIRE(step(4).done_when.empty());
  REQUIRE(step(5).predicate == Predicate{"confirm", {{"key", "confirmation"}}});
  REQUIRE(step(5).done_when == std::vector<Condition>{Condition::has_evidence("confirmation")});
  REQUIRE(step(6).predicate.name == "confirm");
  REQUIRE(step(6).done_when.size() == 1);
  REQUIRE(step(6).done_when[0].kind == Condition::Kind::predicate_true);
  REQUIRE(step(6).done_when[0].predicate.name == "verify_payment");
  REQUIRE(step(6).done_when[0].predicate.args ==
          json{{"gloss", "Verify the payment"}, {"sop_id", "all"}, {"step_index", 6}});
  REQUIRE(step(7).done_when[0].predicate.name == "validate_then_celebrate");
  REQUIRE(step(8).predicate == Predicate{"execute", json::object()});
  REQUIRE(step(8).done_when.empty());
  REQUIRE(step(9).predicate == Predicate{"present_info", {{"key", "priceList"}}});
  REQUIRE(step(10).predicate == Predicate{"use_tool", {{"tool", "refund"}, {"output", "refund"}}});
  REQUIRE(step(11).predicate == Predicate{"gather_info", {{"key", "seat"}}});
  REQUIRE(step(12).predicate.name == "use_tool");
  REQUIRE(step(13).predicate == Predicate{"present_info", {{"key", "phone"}}});
  REQUIRE(step(14).predicate == Predicate{"confirm", {{"key", "ok2"}, {"question", "Sure?"}}});
  REQUIRE(step(15).predicate == Predicate{"gather_info", {{"key", "seat"}, {"prompt", "Window or aisle?"}}});
  REQUIRE(step(16).predicate == Predicate{"confirm", {{"question", "Is the card valid?"}}});
  REQUIRE_THROWS_WITH(sop.step_goal(17), "sop 'all': step 17 is out of range (17 steps)");

  // a present step with no tool step before it just says its gloss
  const Sop plain = Sop::parse(one_step(R"({"gloss": "Show the rules"})"));
  REQUIRE(plain.step_goal(0).predicate == Predicate{"present_info", json::object()});
}

TEST_CASE("a malformed SOP is rejected with the field named") {
  auto bad = [](const std::string& text) { return Sop::parse(text); };
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": "Search trains", "suggested_tools": ["s"], "done_when": ["a", "b"]})")),
                      "sop 't': steps[0].done_when: a tool step produces one key, so 'b' would never appear");
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": "Present trains", "done_when": ["trainList"]})")),
                      "sop 't': steps[0].done_when: a present step produces no evidence, so 'trainList' would never "
                      "appear");
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": "Book the train", "done_when": ["booking"]})")),
                      "sop 't': steps[0].done_when: an execute step produces no evidence, so 'booking' would never "
                      "appear");
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": "Verify it", "done_when": ["ok"]})")),
                      "sop 't': steps[0].done_when: a verify step produces no evidence, so 'ok' would never appear");
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": "Search trains"})")),
                      "sop 't': steps[0].suggested_tools: a 'search' step needs a tool to call");
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": "Ask the"})")),
                      "sop 't': steps[0].gloss: a gather step needs words after the verb (or a done_when key) to name "
                      "what it gathers");
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": "Ask x", "done_when": ["not a key"]})")),
                      "sop 't': steps[0].done_when[0]: 'not a key' is not a valid evidence key");
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": "..."})")), "sop 't': steps[0].gloss: must hold at least one word");
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": 3})")), "sop 't': steps[0].gloss: expected a string, got number");
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": "Search", "suggested_tools": "s"})")),
                      "sop 't': steps[0].suggested_tools: expected an array of strings, got string");
  REQUIRE_THROWS_WITH(bad(one_step(R"({"gloss": "Search", "suggested_tools": [""]})")),
                      "sop 't': steps[0].suggested_tools[0]: expected a non-empty string");
  REQUIRE_THROWS_WITH(bad(R"({"title": "T"})"), "sop 't': steps: missing");
  REQUIRE_THROWS_WITH(bad(R"({"title": "T", "steps": []})"), "sop 't': steps: must not be empty");
  REQUIRE_THROWS_WITH(bad(R"({"steps": []})"), "sop: title: missing");
  REQUIRE_THROWS_WITH(bad(R"({"title": "", "steps": []})"), "sop: title: must not be empty");
  REQUIRE_THROWS_WITH(bad(R"({"title": "!!", "steps": []})"),
                      "sop: title: needs at least one letter or digit to make an id from");
  REQUIRE_THROWS_WITH(bad(R"({"title": "T", "inputs": [], "steps": [{"gloss": "Go"}]})"),
                      "sop 't': inputs: expected an object, got array");
  REQUIRE_THROWS_WITH(bad(R"({"title": "T", "inputs": {"a b": {}}, "steps": [{"gloss": "Go"}]})"),
                      "sop 't': inputs.a b: the input name is not a valid evidence key (expected "
                      "[A-Za-z_][A-Za-z0-9_-]{0,127})");
  REQUIRE_THROWS_WITH(bad(R"({"title": "T", "inputs": {"a": {"required": "yes"}}, "steps": [{"gloss": "Go"}]})"),
                      "sop 't': inputs.a.required: expected a boolean, got string");
  REQUIRE_THROWS_WITH(bad("[1, 2"), cairn_test::ContainsSubstring("sop: invalid JSON: parse error"));
  REQUIRE_THROWS_AS(bad("[1, 2"), cairn::parse_error);
  REQUIRE_THROWS_AS(bad(R"({"title": "T"})"), cairn::invalid_template);
  REQUIRE_THROWS_AS(Sop::parse(std::string(100, '['), cairn::JsonLimits{1000, 10}), cairn::limit_exceeded);
}

TEST_CASE("SopRegistry loads files, refuses duplicates and says which file failed") {
  SopRegistry r;
  const std::string path = goals_test::source_path("examples/sops/train-booking.json");
  r.load_file(path);
  REQUIRE_THROWS_WITH(r.load_file(path), "sop registry: an SOP with id 'train-booking' exists already");
  REQUIRE_THROWS_WITH(r.load_file("/nonexistent/x.json"), "sop file /nonexistent/x.json: cannot be opened");
  REQUIRE_THROWS_WITH(r.load_file(path, cairn::JsonLimits{100, 10}),
                      "sop file " + path + ": more than the limit of 100 bytes");
  const std::string bad = std::string(CAIRN_BINARY_DIR) + "/bad-sop.json";
  std::ofstream(bad) << R"({"title": "Broken", "steps": [{"gloss": "Present", "done_when": ["x"]}]})";
  REQUIRE_THROWS_WITH(r.load_file(bad), "sop file " + bad +
                                            " 'broken': steps[0].done_when: a present step produces "
                                            "no evidence, so 'x' would never appear");
  std::remove(bad.c_str());
  REQUIRE(r.size() == 1);
}

TEST_CASE("the lexical match scores content words of the gloss found in an SOP's title and intent") {
  const auto r = registry();
  auto m = cairn::lexical_match("Find me a train to Paris", *r);
  REQUIRE(m.sop->id == "train-booking");
  REQUIRE(std::abs(m.score - 2.0 / 3.0) < 1e-9);                  // find, train of find, train, paris
  REQUIRE(cairn::lexical_match("Book trains", *r).score == 1.0);  // plural ignored
  REQUIRE(cairn::lexical_match("I want pizza", *r).sop->id == "order-a-pizza");
  REQUIRE(cairn::lexical_match("Create a caching layer", *r).sop == nullptr);
  REQUIRE(cairn::lexical_match("the a to", *r).sop == nullptr);
}

TEST_CASE("SopPlanner: required inputs the evidence lacks become gather_info subgoals, then the steps") {
  SopPlanner planner(registry());
  const cairn::GoalPlan plan = planner.plan(goal("Find me a train to Paris"), {{"destination", "Paris"}});
  REQUIRE(plan.kind == cairn::Decomposition::Kind::all);
  REQUIRE(plan.source == "sop");
  Strings glosses;
  for (const auto& s : plan.subgoals) glosses.push_back(s.gloss);
  REQUIRE(glosses == Strings{"Gather origin", "Gather date", "Search for trains on that day",
                             "Present the available trains", "Ask which train the traveller wants",
                             "Confirm the booking with the traveller",
                             "Call the booking service for the selected train", "Show the booking reference"});
  REQUIRE(plan.subgoals[0].predicate ==
          Predicate{"gather_info", {{"key", "origin"}, {"prompt", "Where are you travelling from?"}}});
  REQUIRE(plan.subgoals[0].provenance ==
          json{{"sop_id", "train-booking"}, {"sop_title", "Book a train ticket"}, {"input", "origin"}});
  REQUIRE(plan.subgoals[2].predicate == Predicate{"use_tool", {{"tool", "train-search-api"}, {"output", "trainList"}}});
  REQUIRE(plan.subgoals[4].predicate ==
          Predicate{"gather_info",
                    {{"key", "selectedTrain"}, {"prompt", "Which train would you like (its time or its id)?"}}});
  REQUIRE(plan.subgoals[6].predicate == Predicate{"use_tool", {{"tool", "train-booking-api"}, {"output", "booking"}}});
  REQUIRE(plan.subgoals[7].predicate == Predicate{"present_info", {{"key", "booking"}}});
  REQUIRE_NOTHROW(cairn::check_plan(plan, "g1"));
}

TEST_CASE("SopPlanner: unmatched goals go to the fallback planner, or fail clearly without one") {
  REQUIRE_THROWS_WITH(SopPlanner(registry()).plan(goal("Create a caching layer"), json::object()),
                      "no SOP matches 'Create a caching layer' and there is no fallback planner");
  cairn::SopPlannerOptions options;
  options.fallback = std::make_shared<goals_test::FnPlanner>([](const Goal& g, const json&) {
    return goals_test::plan_of(cairn::Decomposition::Kind::all, {goals_test::sub("Think about " + g.gloss, "execute")});
  });
  SopPlanner planner(registry(), options);
  REQUIRE(planner.plan(goal("Create a caching layer"), json::object()).subgoals[0].gloss ==
          "Think about Create a caching layer");
  REQUIRE(planner.plan(goal("Find a train"), json::object()).source == "sop");
  // a higher threshold turns a weak match into a fallback
  options.min_score = 0.9;
  REQUIRE(SopPlanner(registry(), options).plan(goal("Find me a train to Paris"), json::object()).source == "test");
  REQUIRE_THROWS_WITH(SopPlanner(nullptr), "SopPlanner: registry must not be null");
}

TEST_CASE("SopPlanner: a host matcher replaces the lexical match") {
  cairn::SopPlannerOptions options;
  json seen;
  options.matcher = [&seen](const Goal& g, const json& evidence, const SopRegistry& r) {
    seen = {{"gloss", g.gloss}, {"evidence", evidence}};
    return evidence.contains("food") ? r.find("order-a-pizza") : nullptr;
  };
  SopPlanner planner(registry(), options);
  REQUIRE(planner.plan(goal("Dinner"), {{"food", true}}).subgoals[0].gloss == "Ask which pizza");
  REQUIRE(seen == json{{"gloss", "Dinner"}, {"evidence", {{"food", true}}}});
  REQUIRE(planner.match(goal("Find me a train to Paris"), json::object()) == nullptr);
}

namespace {

Goal asked(std::string gloss, std::string request) {
  Goal g = goal(std::move(gloss));
  g.provenance = {{"source", "user"}, {"request", std::move(request)}};
  return g;
}

std::shared_ptr<goals_test::FnPlanner> thinking_fallback() {
  return std::make_shared<goals_test::FnPlanner>([](const Goal& g, const json&) {
    return goals_test::plan_of(cairn::Decomposition::Kind::all, {goals_test::sub("Think about " + g.gloss, "execute")});
  });
}

}  // namespace

TEST_CASE("SopRegistry::index stores each SOP as a searchable artifact and mirrors the registry") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  const auto r = registry();
  REQUIRE(r->index(*store, "acme") == 2);
  const auto train = store->fetch("sop:train-booking", "acme");
  REQUIRE(train);
  CHECK(train->type() == "sop");
  CHECK(train->title() == "Book a train ticket");
  CHECK(train->description() == "Find and book a train journey between two cities");
  CHECK(train->metadata() == json{{"sop_id", "train-booking"}});
  const std::string text = train->value().get<std::string>();
  CHECK(text.find("search the timetable") != std::string::npos);  // the description
  CHECK(text.find("Input origin: City the journey starts from") != std::string::npos);
  CHECK(text.find("Show the booking reference") != std::string::npos);  // a step
  CHECK_FALSE(store->fetch("sop:train-booking", "other"));

  // again: nothing changed, nothing stored
  REQUIRE(r->index(*store, "acme") == 0);
  CHECK(store->versions("sop:train-booking", "acme") == std::vector<std::uint64_t>{1});

  // a registry without the pizza SOP removes its artifact; an SOP that changed gets a new version
  SopRegistry smaller;
  smaller.add(Sop::parse(R"({"id": "train-booking", "title": "Book a train ticket", "intent": "Trains",
                             "steps": [{"gloss": "Ask which train"}]})"));
  REQUIRE(smaller.index(*store, "acme") == 2);
  CHECK_FALSE(store->fetch("sop:order-a-pizza", "acme"));
  CHECK(store->fetch("sop:train-booking", "acme")->version() == 2);
  CHECK(store->fetch("sop:train-booking", "acme")->description() == "Trains");
}

TEST_CASE("SopPlanner retrieves an SOP by words when none matches by name") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();  // no embedder: words only
  const auto r = registry();
  r->index(*store, "acme");
  (void)store->store(*cairn::ArtifactRecord::builder()  // not an SOP: never retrieved, though it holds the words
                          .tenant_id("acme")
                          .id("notes")
                          .type("document")
                          .title("timetable notes")
                          .value("travel plans: check the timetable")
                          .build());
  const Goal travel = asked("Travel plans", "I need a seat from Oslo to Bergen, check the timetable");

  cairn::SopPlannerOptions options;
  options.fallback = thinking_fallback();
  // the lexical match alone finds nothing ("travel" and "timetable" are in no title or intent)
  REQUIRE(SopPlanner(r, options).plan(travel, json::object()).subgoals[0].gloss == "Think about Travel plans");

  options.retrieve = cairn::SopRetrieval{store, "acme", 5, 0.25};
  SopPlanner planner(r, options);
  // words: travel, plans, seat, oslo, bergen, check, timetable; the train SOP holds "travel" (an input) and
  // "timetable" (its description): 2 of 7
  const cairn::SopMatch m = planner.retrieve(travel);
  REQUIRE(m.sop == r->find("train-booking"));
  CHECK(m.score == Approx(2.0 / 7.0));
  CHECK(planner.plan(travel, json::object()).source == "sop");
  // the gloss alone when the goal has no request: "Check the timetable" -> check, timetable: 1 of 2
  CHECK(planner.retrieve(goal("Check the timetable")).score == Approx(0.5));
  // "food" is in the pizza SOP's intent; "delivered" is not "delivery" (no stemming)
  CHECK(planner.match(goal("Dinner"), json::object()) == nullptr);
  CHECK(planner.match(asked("Dinner", "some food delivered"), json::object()) == r->find("order-a-pizza"));

  // below min_score: the fallback, as without retrieval
  options.retrieve->min_score = 0.3;
  REQUIRE(SopPlanner(r, options).plan(travel, json::object()).subgoals[0].gloss == "Think about Travel plans");
  // a name match still comes first, without a search
  options.retrieve->store = std::make_shared<cairn::InMemoryArtifactStore>();  // empty: retrieval finds nothing
  CHECK(SopPlanner(r, options).match(goal("Find a train"), json::object()) == r->find("train-booking"));
  CHECK(SopPlanner(r, options).retrieve(travel).sop == nullptr);
  // another tenant's SOP artifacts are never seen
  options.retrieve = cairn::SopRetrieval{store, "other", 5, 0.0};
  CHECK(SopPlanner(r, options).retrieve(travel).sop == nullptr);
  // an artifact of an SOP the registry no longer has is passed over
  SopRegistry only_pizza;
  only_pizza.add(*r->find("order-a-pizza"));
  options.retrieve = cairn::SopRetrieval{store, "acme", 5, 0.0};
  CHECK(SopPlanner(std::make_shared<SopRegistry>(only_pizza), options).retrieve(travel).sop == nullptr);
}

TEST_CASE("SopPlanner retrieves by words and meaning on a store with an embedder") {
  auto embedder = std::make_shared<cairn::testing::WordHashEmbedder>(64);
  cairn::InMemoryStoreOptions store_options;
  store_options.embedder = embedder;
  auto store = std::make_shared<cairn::InMemoryArtifactStore>(store_options);
  const auto r = registry();
  r->index(*store, "acme");
  const Goal travel = asked("Travel plans", "I need a seat from Oslo to Bergen, check the timetable");

  cairn::SopPlannerOptions options;
  options.fallback = thinking_fallback();
  options.retrieve = cairn::SopRetrieval{store, "acme", 5, 0.0};
  const cairn::SopMatch m = SopPlanner(r, options).retrieve(travel);
  REQUIRE(m.sop == r->find("train-booking"));
  // the score is the cosine similarity of the goal's text and the SOP artifact's text, as the embedder sees them
  const auto record = store->fetch("sop:train-booking", "acme");
  const double expected =
      cairn::detail::cosine(embedder->vector_of("Travel plans\nI need a seat from Oslo to Bergen, check the timetable"),
                            embedder->vector_of(embedder->text_of(*record)));
  CHECK(m.score == Approx(expected));
  CHECK(expected > 0.0);
  CHECK(expected < 1.0);

  // a min_score just above it: no SOP counts, the fallback plans
  options.retrieve->min_score = expected + 1e-6;
  CHECK(SopPlanner(r, options).plan(travel, json::object()).subgoals[0].gloss == "Think about Travel plans");

  // an embedder that fails fails the planning with its reason (the engine abandons the goal with it)
  options.retrieve->min_score = 0.0;
  embedder->fault = cairn::testing::WordHashEmbedder::Fault::throws;
  CHECK_THROWS_WITH(SopPlanner(r, options).plan(travel, json::object()), "the model is down");
}

TEST_CASE("SopPlanner: bad retrieval options are refused when the planner is made") {
  cairn::SopPlannerOptions options;
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  options.retrieve = cairn::SopRetrieval{nullptr, "acme", 5, 0.5};
  CHECK_THROWS_WITH(SopPlanner(registry(), options), "SopPlanner: retrieve.store must not be null");
  options.retrieve = cairn::SopRetrieval{store, "", 5, 0.5};
  CHECK_THROWS_WITH(SopPlanner(registry(), options), "SopPlanner: retrieve.tenant must not be empty");
  options.retrieve = cairn::SopRetrieval{store, "acme", 0, 0.5};
  CHECK_THROWS_WITH(SopPlanner(registry(), options), "SopPlanner: retrieve.k must be between 1 and 100 (got 0)");
  options.retrieve = cairn::SopRetrieval{store, "acme", 101, 0.5};
  CHECK_THROWS_WITH(SopPlanner(registry(), options), "SopPlanner: retrieve.k must be between 1 and 100 (got 101)");
}
