// cairn::testing — RecordingStore: an ArtifactStore decorator that records every call and fails the ones a test
// picks, so a host can assert what its agent stored ("the tool output was stored once") and test its error and
// retry paths without a flaky server.
//
//     auto inner = std::make_shared<cairn::InMemoryArtifactStore>();
//     auto store = std::make_shared<cairn::testing::RecordingStore>(inner);
//     store->fail_nth(cairn::testing::StoreOperation::store, 2, cairn::testing::Fault::lost_connection_after_apply);
//     ... run the host's code against `store` ...
//     CHECK(store->count(cairn::testing::StoreOperation::store, "acme", "report") == 1);
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/detail/enum_ostream.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

/// The ArtifactStore call a StoreCall records.
enum class StoreOperation { store, fetch, remove, versions, list, store_if, search, store_embedded, reindex };

inline std::string_view to_string(StoreOperation op) noexcept {
  switch (op) {
    case StoreOperation::store: return "store";
    case StoreOperation::fetch: return "fetch";
    case StoreOperation::remove: return "remove";
    case StoreOperation::versions: return "versions";
    case StoreOperation::list: return "list";
    case StoreOperation::store_if: return "store_if";
    case StoreOperation::search: return "search";
    case StoreOperation::store_embedded: return "store_embedded";
    case StoreOperation::reindex: return "reindex";
  }
  return "store";
}
CAIRN_DETAIL_ENUM_OSTREAM(StoreOperation)

/// True for the operations that change the store: store, store_if, store_embedded and remove (reindex changes
/// only what search sees).
constexpr bool is_write(StoreOperation op) noexcept {
  return op == StoreOperation::store || op == StoreOperation::store_if || op == StoreOperation::remove ||
         op == StoreOperation::store_embedded;
}

/// How a recorded call ended.
enum class CallOutcome {
  ok,                ///< the inner store answered
  error,             ///< the inner store threw (`StoreCall::error` holds its message)
  injected,          ///< a fault was injected before the inner store was called: nothing happened there
  lost_after_apply,  ///< the inner store answered, then a lost connection was simulated: it happened, the caller
                     ///< saw an error
};

inline std::string_view to_string(CallOutcome o) noexcept {
  switch (o) {
    case CallOutcome::ok: return "ok";
    case CallOutcome::error: return "error";
    case CallOutcome::injected: return "injected";
    case CallOutcome::lost_after_apply: return "lost_after_apply";
  }
  return "ok";
}
CAIRN_DETAIL_ENUM_OSTREAM(CallOutcome)

/// What a failing call throws (always cairn::storage_error, as the durable stores do).
enum class Fault {
  storage_error,                 ///< refused before the inner store is called ("injected storage error")
  lost_connection_before_apply,  ///< the connection "broke" before the request reached the store: nothing applied
  lost_connection_after_apply,   ///< the request was applied (committed), then the connection "broke" before the
                                 ///< answer came back: the caller sees an error although the write happened, the
                                 ///< case a host's retry logic must get right (a retried store adds a version)
};

inline std::string_view to_string(Fault f) noexcept {
  switch (f) {
    case Fault::storage_error: return "storage_error";
    case Fault::lost_connection_before_apply: return "lost_connection_before_apply";
    case Fault::lost_connection_after_apply: return "lost_connection_after_apply";
  }
  return "storage_error";
}
CAIRN_DETAIL_ENUM_OSTREAM(Fault)

/// One call as the decorator saw it. While a fault predicate looks at it, only the request fields are set (number,
/// operation_number, write_number, operation, tenant_id, id, version, record); the rest is filled in when the call
/// ends. The numbers count from the RecordingStore's creation or its last start_counting().
struct StoreCall {
  std::size_t number = 0;            ///< 1-based, over all operations, in the order calls started
  std::size_t operation_number = 0;  ///< 1-based, among calls of the same operation
  std::size_t write_number = 0;      ///< 1-based, among writes (store, store_if, remove); 0 for a read
  StoreOperation operation = StoreOperation::store;
  std::string tenant_id;
  /// store: the record's id (empty when the store is to pick one); afterwards the id it got. fetch, remove,
  /// versions: the id asked for. list: the query's prefix.
  std::string id;
  /// store: the version the store gave the record (0 until it did); fetch: the version asked for (0: latest).
  std::uint64_t version = 0;
  /// store: the record given, replaced by the stored record when the store answered; fetch: what it returned.
  ArtifactPtr record;
  CallOutcome outcome = CallOutcome::ok;
  std::string error;  ///< the message of what was thrown, when something was
};

/// Decorates any ArtifactStore: every call is passed on (or failed on purpose) and recorded. Thread-safe: the
/// record and the fault rules sit behind one mutex that is never held while the inner store runs.
class RecordingStore final : public ArtifactStore {
 public:
  using Predicate = std::function<bool(const StoreCall&)>;

  /// Throws cairn::invalid_argument for a null store.
  explicit RecordingStore(std::shared_ptr<ArtifactStore> inner) : inner_(std::move(inner)) {
    if (!inner_) throw invalid_argument("RecordingStore: the inner store must not be null");
  }

  // ---- faults -----------------------------------------------------------------------------------------------------

  /// Fails the `n`th call (1-based, over all operations, fetches and lists included) with `fault`.
  RecordingStore& fail_call(std::size_t n, Fault fault = Fault::storage_error) {
    return fail_when([n](const StoreCall& c) { return c.number == n; }, fault, 1);
  }
  /// Fails the `n`th write — store, store_if or remove — (1-based) with `fault`: "the agent's third write", whatever
  /// it read in between.
  RecordingStore& fail_write(std::size_t n, Fault fault = Fault::storage_error) {
    return fail_when([n](const StoreCall& c) { return c.write_number == n; }, fault, 1);
  }
  /// Fails the `n`th call of `operation` (1-based) with `fault`.
  RecordingStore& fail_nth(StoreOperation operation, std::size_t n, Fault fault = Fault::storage_error) {
    return fail_when([operation, n](const StoreCall& c) { return c.operation == operation && c.operation_number == n; },
                     fault, 1);
  }
  /// Fails calls for which `predicate` is true, at most `times` of them (the default: every one). Rules are tried
  /// in the order they were added; the first that matches and has uses left decides.
  RecordingStore& fail_when(Predicate predicate, Fault fault = Fault::storage_error,
                            std::size_t times = static_cast<std::size_t>(-1)) {
    if (!predicate) throw invalid_argument("RecordingStore::fail_when: the predicate must be set");
    std::lock_guard lock(mutex_);
    rules_.push_back(Rule{std::move(predicate), fault, times});
    return *this;
  }
  /// Forgets every fault rule.
  void clear_faults() {
    std::lock_guard lock(mutex_);
    rules_.clear();
  }

  // ---- the record -------------------------------------------------------------------------------------------------

  /// Every finished call, in the order the calls started.
  std::vector<StoreCall> calls() const {
    std::lock_guard lock(mutex_);
    std::vector<StoreCall> out = done_;
    std::sort(out.begin(), out.end(), [](const StoreCall& a, const StoreCall& b) { return a.number < b.number; });
    return out;
  }
  /// The finished calls for which `predicate` is true, in order.
  std::vector<StoreCall> calls(const Predicate& predicate) const {
    std::vector<StoreCall> out = calls();
    out.erase(std::remove_if(out.begin(), out.end(), [&](const StoreCall& c) { return !predicate(c); }), out.end());
    return out;
  }
  /// How many calls of `operation` finished, whatever their outcome (failed and injected ones included).
  std::size_t count(StoreOperation operation) const {
    return calls([operation](const StoreCall& c) { return c.operation == operation; }).size();
  }
  /// How many calls of `operation` on `id` in `tenant_id` took effect in the inner store (outcome ok or
  /// lost_after_apply): "the tool output was stored once" is `count(StoreOperation::store, tenant, id) == 1`.
  std::size_t count(StoreOperation operation, const std::string& tenant_id, const std::string& id) const {
    return calls([&](const StoreCall& c) {
             return c.operation == operation && c.tenant_id == tenant_id && c.id == id &&
                    (c.outcome == CallOutcome::ok || c.outcome == CallOutcome::lost_after_apply);
           })
        .size();
  }
  /// Forgets the recorded calls (numbering goes on: fail_call(n) still counts from the start).
  void clear_calls() {
    std::lock_guard lock(mutex_);
    done_.clear();
  }
  /// Forgets the recorded calls and counts again from here: the next call is number 1 overall, of its operation and
  /// (a write) among writes, for the record and for fail_call / fail_nth / fail_write (rules already added included).
  /// A test calls it after its setup, so that "the agent's 2nd write" is fail_write(2) whatever the setup did.
  void start_counting() {
    std::lock_guard lock(mutex_);
    done_.clear();
    calls_started_ = 0;
    writes_started_ = 0;
    for (std::size_t& n : per_operation_) n = 0;
  }

  const std::shared_ptr<ArtifactStore>& inner() const noexcept { return inner_; }

  // ---- ArtifactStore ----------------------------------------------------------------------------------------------

  using ArtifactStore::store;

  [[nodiscard]] ArtifactPtr store(const ArtifactRecord& record) override {
    StoreCall call = start(StoreOperation::store, record.tenant_id(), record.id(), 0);
    call.record = std::make_shared<const ArtifactRecord>(record);
    return intercept(std::move(call), [&] { return inner_->store(record); });
  }

  /// Recorded with `version` = the expected version until it succeeds, then the version it stored.
  [[nodiscard]] ArtifactPtr store_if(const ArtifactRecord& record, std::uint64_t expected_version) override {
    StoreCall call = start(StoreOperation::store_if, record.tenant_id(), record.id(), expected_version);
    call.record = std::make_shared<const ArtifactRecord>(record);
    return intercept(std::move(call), [&] { return inner_->store_if(record, expected_version); });
  }

  [[nodiscard]] ArtifactPtr fetch(const std::string& id, const std::string& tenant_id,
                                  std::uint64_t version = latest) const override {
    return self().intercept(self().start(StoreOperation::fetch, tenant_id, id, version),
                            [&] { return inner_->fetch(id, tenant_id, version); });
  }

  void remove(const std::string& id, const std::string& tenant_id) override {
    intercept(start(StoreOperation::remove, tenant_id, id, 0), [&] {
      inner_->remove(id, tenant_id);
      return 0;
    });
  }

  [[nodiscard]] std::vector<std::uint64_t> versions(const std::string& id,
                                                    const std::string& tenant_id) const override {
    return self().intercept(self().start(StoreOperation::versions, tenant_id, id, 0),
                            [&] { return inner_->versions(id, tenant_id); });
  }

  [[nodiscard]] ListPage list(const std::string& tenant_id, const ListQuery& query = {}) const override {
    return self().intercept(self().start(StoreOperation::list, tenant_id, query.prefix, 0),
                            [&] { return inner_->list(tenant_id, query); });
  }

  /// Recorded with `id` = the query's text; faults are injected as into any call.
  [[nodiscard]] SearchPage search(const std::string& tenant_id, const SearchQuery& query) const override {
    return self().intercept(self().start(StoreOperation::search, tenant_id, query.text, 0),
                            [&] { return inner_->search(tenant_id, query); });
  }

  [[nodiscard]] ArtifactPtr store_embedded(const ArtifactRecord& record, const Embedding& embedding) override {
    StoreCall call = start(StoreOperation::store_embedded, record.tenant_id(), record.id(), 0);
    call.record = std::make_shared<const ArtifactRecord>(record);
    return intercept(std::move(call), [&] { return inner_->store_embedded(record, embedding); });
  }

  std::size_t reindex(const std::string& tenant_id) override {
    return intercept(start(StoreOperation::reindex, tenant_id, "", 0), [&] { return inner_->reindex(tenant_id); });
  }

  // Not recorded: what the inner store keeps and embeds with.
  [[nodiscard]] std::optional<Embedding> embedding(const std::string& id, const std::string& tenant_id,
                                                   std::uint64_t version) const override {
    return inner_->embedding(id, tenant_id, version);
  }
  [[nodiscard]] bool keeps_embeddings() const noexcept override { return inner_->keeps_embeddings(); }
  [[nodiscard]] std::shared_ptr<Embedder> embedder() const override { return inner_->embedder(); }

 private:
  struct Rule {
    Predicate predicate;
    Fault fault;
    std::size_t left;
  };

  // Recording is not a change of the store: const calls record too.
  RecordingStore& self() const { return const_cast<RecordingStore&>(*this); }

  StoreCall start(StoreOperation op, const std::string& tenant_id, const std::string& id, std::uint64_t version) {
    StoreCall c;
    c.operation = op;
    c.tenant_id = tenant_id;
    c.id = id;
    c.version = version;
    std::lock_guard lock(mutex_);
    c.number = ++calls_started_;
    c.operation_number = ++per_operation_[static_cast<std::size_t>(op)];
    if (is_write(op)) c.write_number = ++writes_started_;
    return c;
  }

  // The fault for `call`, if a rule matches (predicates run outside the lock; a rule's use is taken under it).
  std::optional<Fault> fault_for(const StoreCall& call) {
    std::vector<std::pair<std::size_t, Rule>> rules;
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < rules_.size(); ++i) {
        if (rules_[i].left > 0) rules.emplace_back(i, rules_[i]);
      }
    }
    for (const auto& [index, rule] : rules) {
      if (!rule.predicate(call)) continue;
      std::lock_guard lock(mutex_);
      if (index < rules_.size() && rules_[index].left > 0) {
        --rules_[index].left;
        return rule.fault;
      }
    }
    return std::nullopt;
  }

  static std::string describe(const StoreCall& c) {
    return fmt::format("call {} ({} #{}, tenant '{}', id '{}')", c.number, to_string(c.operation), c.operation_number,
                       cairn::detail::excerpt(c.tenant_id), cairn::detail::excerpt(c.id));
  }

  template <class F>
  auto intercept(StoreCall call, F&& run) -> decltype(run()) {
    const std::optional<Fault> fault = fault_for(call);
    if (fault && *fault != Fault::lost_connection_after_apply) {
      call.outcome = CallOutcome::injected;
      call.error =
          *fault == Fault::storage_error
              ? fmt::format("RecordingStore: injected storage error on {}", describe(call))
              : fmt::format("RecordingStore: simulated lost connection before {} reached the store", describe(call));
      const std::string message = call.error;
      finish(std::move(call));
      throw storage_error(message);
    }
    decltype(run()) result{};
    try {
      result = run();
    } catch (...) {
      record_error(std::move(call));
      throw;
    }
    note_result(call, result);
    if (fault) {
      call.outcome = CallOutcome::lost_after_apply;
      call.error = fmt::format("RecordingStore: simulated lost connection after {} was applied", describe(call));
      const std::string message = call.error;
      finish(std::move(call));
      throw storage_error(message);
    }
    finish(std::move(call));
    return result;
  }

  // Called from a catch block: records the exception being handled.
  void record_error(StoreCall call) {
    call.outcome = CallOutcome::error;
    try {
      throw;
    } catch (const std::exception& e) {
      call.error = e.what();
    } catch (...) {
      call.error = "unknown exception";
    }
    finish(std::move(call));
  }

  static void note_result(StoreCall& call, const ArtifactPtr& result) {
    call.record = result;
    if ((call.operation == StoreOperation::store || call.operation == StoreOperation::store_if ||
         call.operation == StoreOperation::store_embedded) &&
        result) {
      call.id = result->id();
      call.version = result->version();
    }
  }
  template <class T>
  static void note_result(StoreCall&, const T&) {}

  void finish(StoreCall call) {
    std::lock_guard lock(mutex_);
    done_.push_back(std::move(call));
  }

  std::shared_ptr<ArtifactStore> inner_;
  mutable std::mutex mutex_;
  std::vector<Rule> rules_;
  std::vector<StoreCall> done_;
  std::size_t calls_started_ = 0;
  std::size_t writes_started_ = 0;
  std::size_t per_operation_[9] = {};
};

}  // namespace testing
CAIRN_END_NAMESPACE
