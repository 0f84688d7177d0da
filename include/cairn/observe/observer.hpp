// cairn — Observer and Event: the backend-neutral interface through which a host sees what cairn does (the
// decorator for stores and the full story are in cairn/observe.hpp and docs/observe.md).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cairn/detail/enum_ostream.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

struct GoalTransition;  // goals/engine.hpp
struct ArtifactEvent;   // workflow/machine.hpp
struct StatusReport;    // workflow/machine.hpp

/// What an event reports. The numbers are stable (a host may store them); new kinds get new numbers.
enum class EventKind : int {
  store = 1,                ///< an ArtifactStore call: store, store_if, fetch, remove, versions, list
  journal = 2,              ///< a RunJournal call: append, read, read_for_restore, info, fork, remove, prune, sweep
  resolve = 3,              ///< ExecutionContext::resolve (also the resolution inside execute)
  tool_call = 4,            ///< one execute(): the whole call, resolution and stored outputs included
  goal_transition = 5,      ///< a goal changed status (payload: Event::goal)
  workflow_transition = 6,  ///< a WorkflowMachine start, advance, set_tasks or fail (payload: Event::workflow)
  artifact_registered = 7,  ///< a workflow artifact registration, once committed (payload: Event::artifact)
  index = 8,                ///< search indexing (ArtifactStore::reindex, an index built on open): items of total
};

/// The kind's name, spelled as its enumerator ("tool_call"); "unknown" for a value this version does not know.
constexpr std::string_view to_string(EventKind kind) noexcept {
  switch (kind) {
    case EventKind::store: return "store";
    case EventKind::journal: return "journal";
    case EventKind::resolve: return "resolve";
    case EventKind::tool_call: return "tool_call";
    case EventKind::goal_transition: return "goal_transition";
    case EventKind::workflow_transition: return "workflow_transition";
    case EventKind::artifact_registered: return "artifact_registered";
    case EventKind::index: return "index";
  }
  return "unknown";
}
CAIRN_DETAIL_ENUM_OSTREAM(EventKind)

/// One finished operation. Every view and pointer in it is valid only during the on_event call: an observer that
/// keeps anything copies it (`std::string(e.subject)`).
struct Event {
  EventKind kind = EventKind::store;
  std::string_view operation;  ///< the call: "store", "fetch", "append", "execute", "advance", a goal status, ...
  std::string_view tenant;     ///< "" when the operation has none (goal and workflow events)
  /// What it was about: an artifact id, a run id, a tool name, a goal id, a workflow step, a registered path.
  std::string_view subject;
  std::chrono::nanoseconds duration{0};  ///< steady-clock time the call took; 0 for instant transitions
  std::uint64_t bytes_in = 0;   ///< JSON text given to cairn (a stored value, appended entries, a tool's inputs)
  std::uint64_t bytes_out = 0;  ///< JSON text handed back (a fetched value, a tool's outputs)
  std::uint64_t items = 0;      ///< records listed, entries appended or read, references resolved, outputs stored
  std::uint64_t total = 0;      ///< index: how many items the operation has in all (items of total are done)
  /// How it failed: the cairn::errc of the exception (errc::generic for any other exception and for a tool that
  /// reported failure); errc{} (0) when it succeeded. The exception itself still reaches the caller.
  errc error{};
  std::string_view message;  ///< why it failed (the exception's what()); "" when it succeeded

  const GoalTransition* goal = nullptr;     ///< goal_transition: the transition
  const ArtifactEvent* artifact = nullptr;  ///< artifact_registered: the registered file
  const StatusReport* workflow = nullptr;   ///< workflow_transition: where the workflow is now

  bool failed() const noexcept { return error != errc{}; }
};

/// What a host implements to see events.
///
/// Thread-safety: cairn may call one observer from several threads at once (a shared store is used by every
/// thread), so on_event must be thread-safe. cairn never calls it while holding one of its own locks, so an
/// observer may call back into cairn (but an ExecutionContext, GoalEngine or WorkflowMachine is one-owner: not the
/// object whose event it is hearing). on_event is noexcept: an observer that throws ends the program
/// (std::terminate), as a throwing destructor would; FunctionObserver catches for its callable.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_event(const Event& event) noexcept = 0;

 protected:
  Observer() = default;
  Observer(const Observer&) = default;
  Observer& operator=(const Observer&) = default;
};

/// An Observer around any callable `void(const Event&)`. What the callable throws is caught and dropped: watching
/// must not change what cairn does.
class FunctionObserver final : public Observer {
 public:
  explicit FunctionObserver(std::function<void(const Event&)> fn) : fn_(std::move(fn)) {}
  void on_event(const Event& event) noexcept override {
    if (!fn_) return;
    try {
      fn_(event);
    } catch (...) {  // NOLINT(bugprone-empty-catch): documented: a throwing observer is ignored
    }
  }

 private:
  std::function<void(const Event&)> fn_;
};

/// `std::make_shared<FunctionObserver>(fn)`.
inline std::shared_ptr<Observer> observe_with(std::function<void(const Event&)> fn) {
  return std::make_shared<FunctionObserver>(std::move(fn));
}

/// One observer that tells each of `observers` (nulls skipped), in order.
inline std::shared_ptr<Observer> fan_out(std::vector<std::shared_ptr<Observer>> observers) {
  class FanOut final : public Observer {
   public:
    explicit FanOut(std::vector<std::shared_ptr<Observer>> all) : all_(std::move(all)) {}
    void on_event(const Event& event) noexcept override {
      for (const auto& o : all_) o->on_event(event);
    }

   private:
    std::vector<std::shared_ptr<Observer>> all_;
  };
  std::vector<std::shared_ptr<Observer>> kept;
  for (auto& o : observers) {
    if (o) kept.push_back(std::move(o));
  }
  if (kept.empty()) return nullptr;
  if (kept.size() == 1) return kept.front();
  return std::make_shared<FanOut>(std::move(kept));
}

/// `fan_out({a, b, ...})`.
template <class... Observers>
std::shared_ptr<Observer> fan_out(std::shared_ptr<Observers>... observers) {
  return fan_out(std::vector<std::shared_ptr<Observer>>{std::move(observers)...});
}

namespace detail {

/// The length of `j`'s compact JSON text, computed without building it: what bytes_in / bytes_out report. Only
/// ever called when an observer is set.
inline std::uint64_t json_bytes(const nlohmann::json& j) { return json_text_size(j); }

/// Fills the error fields of `e` from the exception in flight.
inline void describe_current_exception(Event& e) noexcept {
  try {
    throw;
  } catch (const error& x) {
    e.error = x.code() == errc{} ? errc::generic : x.code();
    e.message = x.what();
  } catch (const std::exception& x) {
    e.error = errc::generic;
    e.message = x.what();
  } catch (...) {
    e.error = errc::generic;
    e.message = "an exception that is not a std::exception";
  }
}

/// Runs `call`; when `observer` is set, times it and reports one event: `fill(event, result)` (or `fill(event)` for
/// a void call) adds sizes after a success; a failure reports the exception's code and text, then rethrows. With no
/// observer this is exactly `call()`.
template <class Call, class Fill>
auto observe_call(Observer* observer, EventKind kind, std::string_view operation, std::string_view tenant,
                  std::string_view subject, Call&& call, Fill&& fill) -> decltype(call()) {
  if (!observer) return call();
  using clock = std::chrono::steady_clock;
  Event e;
  e.kind = kind;
  e.operation = operation;
  e.tenant = tenant;
  e.subject = subject;
  const auto start = clock::now();
  auto elapsed = [&start] {
    // A call always took some time: a coarse clock reporting 0 would read as "not timed".
    return std::max(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start),
                    std::chrono::nanoseconds(1));
  };
  if constexpr (std::is_void_v<decltype(call())>) {
    try {
      call();
    } catch (...) {
      e.duration = elapsed();
      describe_current_exception(e);
      observer->on_event(e);
      throw;
    }
    e.duration = elapsed();
    fill(e);
    observer->on_event(e);
  } else {
    try {
      auto result = call();
      e.duration = elapsed();
      fill(e, result);
      observer->on_event(e);
      return result;
    } catch (...) {
      if (e.duration.count() == 0) {  // not thrown by fill or the observer: report it
        e.duration = elapsed();
        describe_current_exception(e);
        observer->on_event(e);
      }
      throw;
    }
  }
}

}  // namespace detail

CAIRN_END_NAMESPACE
