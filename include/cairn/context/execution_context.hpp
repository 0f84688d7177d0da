// cairn — ExecutionContext: the named artifacts and the conversation of one agent run.
//
// A context binds names ("server_file", "app_config") to records kept in an ArtifactStore, and keeps the
// conversation log. fork() hands a sub-agent a snapshot in O(1) whatever the context holds (both sides share
// persistent tries and go their own way), and merge() brings back what the sub-agents added.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/clock.hpp"
#include "cairn/context/detail/persistent_map.hpp"
#include "cairn/context/detail/persistent_vector.hpp"
#include "cairn/context/resolve.hpp"
#include "cairn/detail/enum_ostream.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/detail/time.hpp"
#include "cairn/error.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/run/run.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// Who said something in the conversation log.
enum class Role { user, assistant, system, tool };

std::string_view to_string(Role role) noexcept;
CAIRN_DETAIL_ENUM_OSTREAM(Role)

/// The role named `text` ("user", "assistant", "system", "tool"); throws cairn::invalid_argument otherwise.
Role role_from_string(std::string_view text);

/// One entry of the conversation log. `content` may mention artifacts as `@name`.
struct Message {
  Role role = Role::user;
  std::string content;
  std::int64_t timestamp = 0;  ///< milliseconds since the Unix epoch, UTC

  friend bool operator==(const Message& a, const Message& b);
  friend bool operator!=(const Message& a, const Message& b) { return !(a == b); }
};

void to_json(nlohmann::json& j, const Message& m);

void from_json(const nlohmann::json& j, Message& m);

/// A tool call as the run journal knows it (see execute() in tool.hpp).
struct RecordedCall {
  enum class Status { intended, finished, failed };
  std::string call_id;
  std::string tool;
  std::string input_hash;  ///< of the resolved inputs, to tell a re-issued call from a different one
  Status status = Status::intended;
  std::vector<std::pair<std::string, std::pair<std::string, std::uint64_t>>> outputs;  ///< name -> (id, version)
  std::string error;                                                                   ///< why it failed
  /// The attempts claimed so far: 1 for the first run, one more for each claimed retry (context.tool_retry).
  std::uint32_t attempt = 1;
  /// For a call not settled yet: when its latest attempt was claimed (its `tool_intended` or `tool_retry` entry's
  /// journal time, ms since the Unix epoch; 0 when unknown). RunOptions::call_lease counts from here.
  std::int64_t claimed_at = 0;
};

/// A call whose latest attempt was claimed less than RunOptions::call_lease ago: another worker may be running it
/// right now, so it is in flight, not in doubt, and execute() neither runs it nor asks the in-doubt policy about it.
/// A cairn::conflict (the run is another worker's for now): wait until lease_ends_at() (by the journal's clock),
/// then reopen the run, which then holds the call's outcome, or holds it in doubt.
class call_in_flight : public conflict {
 public:
  call_in_flight(const std::string& what, RecordedCall call, std::uint64_t seq, std::int64_t lease_ends_at)
      : conflict(what, seq, seq, errc::call_in_flight), call_(std::move(call)), lease_ends_at_(lease_ends_at) {}
  const RecordedCall& call() const noexcept { return call_; }
  /// When the lease ends, in ms since the Unix epoch by the journal's clock.
  std::int64_t lease_ends_at() const noexcept { return lease_ends_at_; }

 private:
  RecordedCall call_;
  std::int64_t lease_ends_at_;
};

std::string_view to_string(RecordedCall::Status s) noexcept;
CAIRN_DETAIL_ENUM_OSTREAM(RecordedCall::Status)

namespace detail {

/// The idempotency key of call `call_id` of run `run_id` ("" outside a run) in `tenant`: the first 16 bytes of
/// SHA-256 over "cairn.tool_call.v1" followed by, for each of tenant, run id and call id, its length in bytes in
/// decimal, ':' and its bytes, as 32 lowercase hex digits.
std::string call_key(std::string_view tenant, std::string_view run_id, std::string_view call_id);

/// The artifact id of output `name` of that call in a run: "tool-" and 32 hex digits, derived like call_key from
/// "cairn.tool_output.v1", the tenant, the run id, the call id and the output name.
std::string call_output_id(std::string_view tenant, std::string_view run_id, std::string_view call_id,
                           std::string_view name);

}  // namespace detail

/// A name and the stored record it is bound to.
struct NamedArtifact {
  std::string name;
  ArtifactPtr record;
};

/// Named artifacts and the conversation of one agent run.
///
/// Not thread-safe: one owner. A context is never shared between threads; give each thread its own fork(). Forks
/// of one context may live on different threads at the same time (they share only immutable nodes, an atomic
/// counter and the Clock, which is thread-safe), and the ArtifactStore they share is thread-safe.
///
///     auto store = std::make_shared<cairn::InMemoryArtifactStore>();
///     cairn::ExecutionContext ctx(store, "acme");
///     ctx.add_artifact("app_config", cairn::ArtifactRecord::builder()
///                                         .type(cairn::ArtifactType::config)
///                                         .description("Server configuration")
///                                         .value({{"port", 3000}}));
///     ctx.resolve({{"env", "@app_config"}});  // {"env": {"port": 3000}}
class ExecutionContext : private RunParticipant {
 public:
  /// Throws cairn::invalid_argument for a null store or an empty tenant. `clock` stamps the messages of this
  /// context and of all its forks (null: the system clock).
  ExecutionContext(std::shared_ptr<ArtifactStore> store, std::string tenant_id, std::shared_ptr<Clock> clock = nullptr);

  /// A context for a conversation only: messages (and, attached to a run, their journal) without an artifact store.
  /// add_artifact, bind, execute() and a GoalEngine need a store: on this context they throw cairn::state_error
  /// saying so (nothing changes), and attaching it to a run that holds bindings does too. Throws
  /// cairn::invalid_argument for an empty tenant.
  explicit ExecutionContext(std::string tenant_id, std::shared_ptr<Clock> clock = nullptr);

  // A copy would share trie nodes under one edit token; fork() is the way to copy.
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;
  /// A moved-from context may only be destroyed or assigned to. A context attached to a run stays attached.
  ExecutionContext(ExecutionContext&& other) noexcept { take(std::move(other)); }
  ExecutionContext& operator=(ExecutionContext&& other) noexcept {
    if (this != &other) {
      detach();
      take(std::move(other));
    }
    return *this;
  }
  ~ExecutionContext() override { detach(); }

  /// The artifact store; null for a context made for a conversation only.
  const std::shared_ptr<ArtifactStore>& store() const noexcept { return store_; }
  /// The artifact store, or cairn::state_error naming `operation` when this context has none.
  ArtifactStore& require_store(std::string_view operation) const;
  const std::string& tenant_id() const noexcept { return tenant_id_; }
  /// The clock that stamps messages; null when it is the system clock.
  const std::shared_ptr<Clock>& clock() const noexcept { return clock_; }

  /// Reports this context's resolutions (EventKind::resolve) and the tool calls execute() runs in it
  /// (EventKind::tool_call) to `observer`; forks made afterwards inherit it. Null (the default): nothing is reported,
  /// timed or measured. Store calls are reported by the store itself: wrap it with cairn::observed (observe.hpp).
  void set_observer(std::shared_ptr<Observer> observer) { observer_ = std::move(observer); }
  const std::shared_ptr<Observer>& observer() const noexcept { return observer_; }

  // ---- artifacts ------------------------------------------------------------------------------------------------

  /// Stores `record` in the store, stamped with this context's tenant, and binds `name` to the stored record
  /// (replacing an earlier binding of the name, which keeps its place in list_artifacts()). Returns the stored
  /// record. Throws cairn::invalid_argument for a malformed name (nothing is stored then).
  ///
  /// In a context attached to a run, the record is stored before its binding is committed, so a crash in between
  /// (or a batch that never commits) leaves it stored and unbound; the step done again after the resume finds it
  /// instead of storing a second copy, so the resumed run holds what an uninterrupted one would (docs/runs.md):
  /// a record without an id gets one derived from the run, the name and the binding's ordering key (`bind-` and 32
  /// hex digits), and what a lost attempt left under it is reused when it holds the same content, else replaced; a
  /// record with the host's id reuses the oldest of the id's newest versions that hold the same content and are
  /// newer than the one `name` is bound to (all of them when `name` is bound to none of this id).
  ArtifactPtr add_artifact(const std::string& name, const ArtifactRecord& record);

  /// The same for a record still being built: the tenant is filled in before validation, so the builder need not
  /// set it. Throws cairn::invalid_artifact when the record is invalid.
  ArtifactPtr add_artifact(const std::string& name, ArtifactRecord::Builder builder);

  /// Binds `name` to a record that is already in this context's store and tenant (fetched by id, or stored by
  /// another context) without storing it again. Throws cairn::invalid_argument for a null record, a record of
  /// another tenant, or one that was never stored (no id).
  void bind(const std::string& name, ArtifactPtr stored);

  /// The record bound to `name`, or null.
  ArtifactPtr get_artifact(std::string_view name) const;

  /// Only the value of the record bound to `name` (shared, not copied), or null when the name is unbound.
  std::shared_ptr<const nlohmann::json> get_artifact_value(std::string_view name) const;

  bool has_artifact(std::string_view name) const { return bindings_.find(name) != nullptr; }
  std::size_t artifact_count() const noexcept { return bindings_.size(); }

  /// Every binding, in the order the names were first bound (O(n log n)).
  std::vector<NamedArtifact> list_artifacts() const;

  /// True when `name` matches `[A-Za-z_][A-Za-z0-9_-]{0,127}`.
  static bool is_valid_name(std::string_view name) noexcept { return is_valid_artifact_name(name); }

  // ---- conversation ---------------------------------------------------------------------------------------------

  /// Appends a message stamped with the current time (of the context's clock).
  void add_message(Role role, std::string content);
  /// Appends a message as given (its own timestamp).
  void add_message(Message message);

  std::size_t message_count() const noexcept { return log_.size(); }
  /// The message at `index` (0 is the oldest); throws cairn::invalid_argument when out of range.
  const Message& message(std::size_t index) const;
  /// The whole log, oldest first.
  std::vector<Message> messages() const { return last_messages(log_.size()); }
  /// The newest `n` messages (fewer when the log is shorter), oldest first.
  std::vector<Message> last_messages(std::size_t n) const;

  // ---- fork and merge -------------------------------------------------------------------------------------------

  /// A child context that sees this context's bindings and messages as they are now. Later writes on either side
  /// stay invisible to the other. O(1) whatever the context holds. Logically const: the parent only takes a new
  /// edit token so that it never writes a trie node the child can see.
  ExecutionContext fork() const;

  /// Brings back what `child` (a fork of this context) added since the fork or since its last merge: its new or
  /// rebound names, where a name written on both sides keeps the later write, and its new messages, appended in
  /// order. Throws cairn::invalid_argument when `child` is not a fork of this context. Afterwards the child counts
  /// as merged up to now, so merging it again brings only what it adds later.
  void merge(ExecutionContext& child) { merge(std::vector<std::reference_wrapper<ExecutionContext>>{child}); }

  /// The same for several children: names written by several of them keep the latest write; messages are appended
  /// child by child, in the order given. Every child is checked before anything changes.
  ///
  ///     auto a = ctx.fork(), b = ctx.fork();
  ///     // ... run a and b on two threads, join them ...
  ///     ctx.merge({a, b});
  void merge(const std::vector<std::reference_wrapper<ExecutionContext>>& children);

  // ---- durable runs ---------------------------------------------------------------------------------------------

  /// Records this context in `run` from now on (see cairn/run/run.hpp): when the run holds a context already, this
  /// context's bindings, log and tool calls are replaced by the run's (the records are fetched from this context's
  /// store, which must hold them); otherwise what the context holds now is recorded. Every later binding, message
  /// and tool call is committed to the run before it takes effect here. Throws what Run::attach throws, and
  /// cairn::state_error when a bound record is missing from the store. The run must outlive the attachment
  /// (detach() or the context's end).
  void attach(Run& run);
  /// Stops recording (the run keeps what was recorded).
  void detach() noexcept;
  /// The run this context records into, or null.
  Run* run() const noexcept { return run_; }

  /// The context as JSON: `{"bindings": [{"name", "id", "version", "first", "write"}...], "messages": [...],
  /// "calls": {...}}`, bindings in list_artifacts() order with the ordering keys merge() uses. A context restored
  /// from a run gives the same JSON, byte for byte, as the original did at the same point of the run.
  nlohmann::json state() const { return participant_state(); }

  /// The tool call `call_id` as the attached run recorded it, or nothing.
  std::optional<RecordedCall> recorded_call(const std::string& call_id) const;
  /// Calls that were recorded as intended but never as finished or failed, and whose lease (RunOptions::call_lease)
  /// has ended: the process running them stopped in between, and whether the tool's effect happened is unknown.
  /// execute() will not run them again by itself.
  std::vector<RecordedCall> in_doubt_calls() const;
  /// Calls recorded as intended, not settled, whose latest attempt was claimed less than RunOptions::call_lease ago
  /// by the journal's clock: another worker may be running them (see call_in_flight).
  std::vector<RecordedCall> in_flight_calls() const;
  /// When the lease of unsettled call `c` ends (ms since the Unix epoch, by the journal's clock), if it is in flight
  /// now; nothing when it is in doubt (or settled, or the context has no run).
  std::optional<std::int64_t> lease_end(const RecordedCall& c) const;
  /// Throws cairn::call_in_flight, naming the call, the run, how long ago it was claimed and when its lease ends,
  /// when call `c` is in flight (lease_end()). `what` names the operation refused.
  void check_not_in_flight(const RecordedCall& c, std::string_view what) const;

  /// For execute(): records that `call` is about to run, before it runs.
  void record_call_intended(const std::string& call_id, const std::string& tool, const std::string& input_hash);
  /// For execute(): binds the stored outputs, logs one message per output and marks the call finished, as one
  /// recorded change.
  void record_call_finished(const std::string& call_id, const std::string& tool, const std::string& input_hash,
                            const std::vector<NamedArtifact>& outputs, const std::vector<Message>& messages);
  /// For execute(): logs the failure message and marks the call failed, as one recorded change.
  void record_call_failed(const std::string& call_id, const std::string& tool, const std::string& input_hash,
                          const std::string& error, const Message& message);
  /// For execute(): claims call `call_id`, which is in doubt, for attempt `attempt` (a retry, or a host's "done")
  /// with a `context.tool_retry {call, attempt}` entry committed now (even inside a batch), before anything of the
  /// attempt happens: of two workers resuming the run, the second gets cairn::conflict here. Throws
  /// cairn::state_error when the call is not in doubt, cairn::call_in_flight while its lease holds.
  void record_call_retry(const std::string& call_id, std::uint32_t attempt);
  /// A fresh call id for a call that came without one: `call-<n>`, n one more than the calls this context recorded
  /// as finished or failed. A call in doubt is not counted, so re-executing it after a resume gets its id again,
  /// and a resumed run numbers its later calls as an uninterrupted one does. O(1): the settled calls are counted
  /// as they settle.
  std::string next_call_id() const;
  /// The idempotency key a tool is given for call `call_id` of this context (ToolInvocation::idempotency_key): the
  /// same in every process and worker of the attached run; without a run, derived from the tenant and the id only.
  std::string call_key(const std::string& call_id) const {
    return detail::call_key(tenant_id_, run_ ? run_->run_id() : std::string(), call_id);
  }

  // ---- resolution -----------------------------------------------------------------------------------------------

  /// `inputs` with every `@name` / `@name#/pointer` replaced by (a part of) that artifact's value and every `@@x`
  /// by `@x`, at any depth (see resolve.hpp for what counts as a reference). Throws cairn::artifact_not_found
  /// ("Artifact not found: @name at /args/0"), cairn::not_found for a pointer to nothing, cairn::parse_error for a
  /// malformed pointer and cairn::limit_exceeded for input nested deeper than `options.max_depth` or whose
  /// references would insert more than `options.max_resolved_bytes` of JSON text (checked before copying).
  ///
  ///     ctx.resolve({{"command", "node"}, {"args", {"@server_file"}}})  // {"args": ["/tmp/server.js"], ...}
  [[nodiscard]] nlohmann::json resolve(const nlohmann::json& inputs, const ResolveOptions& options = {}) const;

 private:
  using Counter = std::atomic<std::uint64_t>;
  struct Binding {
    ArtifactPtr record;
    std::uint64_t first_seq;  // when the name was first bound: the order of list_artifacts()
    std::uint64_t write_seq;  // when this binding was made: later writes win in merge()
  };
  using Bindings = detail::PersistentMap<Binding>;
  using Log = detail::PersistentVector<Message>;

  ExecutionContext(std::shared_ptr<ArtifactStore> store, std::string tenant_id, std::shared_ptr<Counter> counter,
                   std::shared_ptr<Clock> clock, std::uint64_t id)
      : store_(std::move(store)),
        tenant_id_(std::move(tenant_id)),
        counter_(std::move(counter)),
        clock_(std::move(clock)),
        id_(id) {}

  std::uint64_t tick() const { return counter_->fetch_add(1, std::memory_order_relaxed); }

  static void check_name(const std::string& name);

  ArtifactPtr bind_stored(const std::string& name, ArtifactPtr stored);
  ArtifactPtr bind_stored(const std::string& name, ArtifactPtr stored, std::uint64_t seq);
  // add_artifact's store: in a run, finds again what a lost attempt of the same step stored (see add_artifact).
  ArtifactPtr store_to_bind(const std::string& name, const ArtifactRecord& record, std::uint64_t seq);

  // ---- RunParticipant --------------------------------------------------------------------------------------------

  static JournalEntry entry(const char* kind, nlohmann::json data);
  static nlohmann::json bind_json(const std::string& name, const Binding& b);
  static nlohmann::json call_json(const RecordedCall& c);
  static RecordedCall call_from_json(const nlohmann::json& j, RecordedCall::Status status);
  // The member `key` of the recorded object `j` (what `where` names), checked to be of `type` (number_unsigned: a
  // non-negative integer; number_integer: any integer); throws cairn::state_error saying what is wrong.
  static const nlohmann::json& recorded(const nlohmann::json& j, const char* key, nlohmann::json::value_t type,
                                        std::string_view where);
  static Message message_from_json(const nlohmann::json& j, std::string_view where);

  // Binds as a recorded entry says, with the recorded ordering keys; the shared counter moves past them. The
  // record is fetched when the replay ends (participant_restored()), once per name however often it was rebound.
  void apply_bind(const nlohmann::json& j, std::string_view where);

  std::string participant_name() const override { return "context"; }
  void participant_detached() noexcept override { run_ = nullptr; }
  // Its entries (bindings, messages, tool calls) are its state: a copy would only repeat them.
  bool participant_checkpointed() const override { return false; }
  CAIRN_INLINE void participant_restored() override;

  CAIRN_INLINE nlohmann::json participant_state() const override;

  CAIRN_INLINE void restore_participant(const nlohmann::json& state) override;

  CAIRN_INLINE void apply_participant_entry(std::string_view kind, const JournalEntry& e) override;

  void take(ExecutionContext&& other) noexcept;

  // Records `c` in calls_, keeping settled_calls_ right.
  void set_call(RecordedCall c);
  // A `context.<kind>` entry stamped now by the journal's clock (a claim's time is its lease's start).
  JournalEntry claim_entry(const char* kind, nlohmann::json data) const;

  // The attempt a call has claimed (1 when it has no record yet).
  std::uint32_t attempt_of(const std::string& call_id) const;

  std::shared_ptr<ArtifactStore> store_;
  std::string tenant_id_;
  std::shared_ptr<Counter> counter_;    // shared by a context and all its forks: sequence numbers and edit tokens
  std::shared_ptr<Clock> clock_;        // shared by a context and all its forks: message timestamps (null: system)
  std::shared_ptr<Observer> observer_;  // inherited by forks: resolve and tool_call events (null: none)
  std::uint64_t id_ = 0;
  std::uint64_t parent_id_ = 0;  // 0 for a context that is no fork
  // mutable: fork() moves the parent to a fresh edit token, which changes nothing it shows.
  mutable Bindings bindings_;
  mutable Log log_;
  std::vector<std::string> written_;           // names bound since the fork or the last merge into the parent
  std::size_t merged_messages_ = 0;            // messages up to here are the parent's, or were merged already
  std::map<std::string, RecordedCall> calls_;  // tool calls recorded while attached to a run
  std::size_t settled_calls_ = 0;              // of calls_, those finished or failed (next_call_id())
  struct RecordedBinding {
    std::string id;
    std::uint64_t version;
    std::uint64_t first_seq;
    std::uint64_t write_seq;
  };
  std::unordered_map<std::string, RecordedBinding> restoring_;  // bindings replayed, fetched when the replay ends
  Run* run_ = nullptr;
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/context/execution_context-inl.hpp"
#endif
