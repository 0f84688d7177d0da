// Enums print by name: to_string and an operator<< beside each enum (cairn/detail/enum_ostream.hpp), which Catch2
// (StringMaker) and GoogleTest (PrintToString, in agent/weather_agent_gtest_test.cpp) pick up, so a failing
// CHECK(c.outcome == CallOutcome::ok) reads "injected == ok", not "2 == 0".
#include <sstream>
#include <string>

#include "cairn/context/execution_context.hpp"
#include "cairn/error.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/goals/interfaces.hpp"
#include "cairn/goals/sop.hpp"
#include "cairn/handoff/reveal.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/testing/recording_store.hpp"
#include "cairn/workflow/state.hpp"
#include "cairn/workflow/template.hpp"
#include "catch.hpp"

namespace ct = cairn::testing;

namespace {

template <class T>
std::string streamed(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

TEST_CASE("the testing kit's enums print their names, to a stream and in Catch2's messages") {
  CHECK(Catch::Detail::stringify(ct::CallOutcome::lost_after_apply) == "lost_after_apply");
  CHECK(Catch::Detail::stringify(ct::StoreOperation::store_if) == "store_if");
  CHECK(Catch::Detail::stringify(ct::Fault::lost_connection_before_apply) == "lost_connection_before_apply");
  CHECK(ct::to_string(ct::Fault::storage_error) == "storage_error");
  CHECK(ct::to_string(ct::Fault::lost_connection_after_apply) == "lost_connection_after_apply");
  CHECK(streamed(ct::CallOutcome::injected) == "injected");
  CHECK(streamed(ct::StoreOperation::fetch) == "fetch");
  CHECK(streamed(ct::Fault::lost_connection_after_apply) == "lost_connection_after_apply");
}

TEST_CASE("cairn's own enums print their names") {
  CHECK(Catch::Detail::stringify(cairn::errc::conflict) == "conflict");
  CHECK(Catch::Detail::stringify(cairn::GoalStatus::achieved) == "achieved");
  CHECK(Catch::Detail::stringify(cairn::Role::assistant) == "assistant");
  CHECK(Catch::Detail::stringify(cairn::ArtifactType::document) == "document");
  CHECK(streamed(cairn::errc::script_error) == "script_error");
  CHECK(streamed(static_cast<cairn::errc>(999)) == "unknown");
  CHECK(streamed(cairn::GoalStatus::blocked) == "blocked");
  CHECK(streamed(cairn::Decomposition::Kind::any) == "OR");
  CHECK(streamed(cairn::Interpretation::Action::add_evidence) == "add_evidence");
  CHECK(streamed(cairn::detail::SopVerb::confirm) == "confirm");
  CHECK(streamed(cairn::Role::tool) == "tool");
  CHECK(streamed(cairn::RecordedCall::Status::intended) == "intended");
  CHECK(streamed(cairn::RevealPolicy::summary) == "summary");
  CHECK(streamed(cairn::EventKind::tool_call) == "tool_call");
  CHECK(streamed(cairn::WorkflowStatus::complete) == "complete");
  CHECK(streamed(cairn::TaskStatus::in_progress) == "in_progress");
  CHECK(streamed(cairn::StepType::ralph) == "ralph");
  CHECK(streamed(cairn::OnFail::skip) == "skip");
}
