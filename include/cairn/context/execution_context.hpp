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
#include "cairn/observe/observer.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/detail/time.hpp"
#include "cairn/error.hpp"
#include "cairn/run/run.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// Who said something in the conversation log.
enum class Role { user, assistant, system, tool };

inline std::string_view to_string(Role role) noexcept {
  switch (role) {
    case Role::user: return "user";
    case Role::assistant: return "assistant";
    case Role::system: return "system";
    case Role::tool: return "tool";
  }
  return "system";
}

/// The role named `text` ("user", "assistant", "system", "tool"); throws cairn::invalid_argument otherwise.
inline Role role_from_string(std::string_view text) {
  for (Role r : {Role::user, Role::assistant, Role::system, Role::tool}) {
    if (to_string(r) == text) return r;
  }
  throw invalid_argument(fmt::format("role: '{}' is not one of user, assistant, system, tool", detail::excerpt(text)));
}

/// One entry of the conversation log. `content` may mention artifacts as `@name`.
struct Message {
  Role role = Role::user;
  std::string content;
  std::int64_t timestamp = 0;  ///< milliseconds since the Unix epoch, UTC

  friend bool operator==(const Message& a, const Message& b) {
    return a.role == b.role && a.content == b.content && a.timestamp == b.timestamp;
  }
  friend bool operator!=(const Message& a, const Message& b) { return !(a == b); }
};

inline void to_json(nlohmann::json& j, const Message& m) {
  j = {{"role", to_string(m.role)}, {"content", m.content}, {"timestamp", m.timestamp}};
}

inline void from_json(const nlohmann::json& j, Message& m) {
  m.role = role_from_string(j.at("role").get<std::string>());
  m.content = j.at("content").get<std::string>();
  m.timestamp = j.at("timestamp").get<std::int64_t>();
}

/// A tool call as the run journal knows it (see execute() in tool.hpp).
struct RecordedCall {
  enum class Status { intended, finished, failed };
  std::string call_id;
  std::string tool;
  std::string input_hash;  ///< of the resolved inputs, to tell a re-issued call from a different one
  Status status = Status::intended;
  std::vector<std::pair<std::string, std::pair<std::string, std::uint64_t>>> outputs;  ///< name -> (id, version)
  std::string error;                                                                    ///< why it failed
};

inline std::string_view to_string(RecordedCall::Status s) noexcept {
  switch (s) {
    case RecordedCall::Status::intended: return "intended";
    case RecordedCall::Status::finished: return "finished";
    case RecordedCall::Status::failed: return "failed";
  }
  return "intended";
}

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
  ExecutionContext(std::shared_ptr<ArtifactStore> store, std::string tenant_id, std::shared_ptr<Clock> clock = nullptr)
      : store_(std::move(store)),
        tenant_id_(std::move(tenant_id)),
        counter_(std::make_shared<Counter>(1)),
        clock_(std::move(clock)) {
    if (!store_) throw invalid_argument("ExecutionContext: store must not be null");
    detail::check_tenant(tenant_id_);
    id_ = tick();
    const std::uint64_t edit = tick();
    bindings_ = Bindings(edit);
    log_ = Log(edit);
  }

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

  const std::shared_ptr<ArtifactStore>& store() const noexcept { return store_; }
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
  ArtifactPtr add_artifact(const std::string& name, const ArtifactRecord& record) {
    check_name(name);
    return bind_stored(name, store_->store(*record.to_builder().tenant_id(tenant_id_).build()));
  }

  /// The same for a record still being built: the tenant is filled in before validation, so the builder need not
  /// set it. Throws cairn::invalid_artifact when the record is invalid.
  ArtifactPtr add_artifact(const std::string& name, ArtifactRecord::Builder builder) {
    check_name(name);
    return bind_stored(name, store_->store(*builder.tenant_id(tenant_id_).build()));
  }

  /// Binds `name` to a record that is already in this context's store and tenant (fetched by id, or stored by
  /// another context) without storing it again. Throws cairn::invalid_argument for a null record, a record of
  /// another tenant, or one that was never stored (no id).
  void bind(const std::string& name, ArtifactPtr stored) {
    check_name(name);
    if (!stored) throw invalid_argument(fmt::format("bind '{}': record must not be null", name));
    if (stored->tenant_id() != tenant_id_) {
      throw invalid_argument(fmt::format("bind '{}': the record belongs to another tenant", name));
    }
    if (stored->id().empty() || stored->version() == 0) {
      throw invalid_argument(fmt::format("bind '{}': the record has not been stored (use add_artifact)", name));
    }
    bind_stored(name, std::move(stored));
  }

  /// The record bound to `name`, or null.
  ArtifactPtr get_artifact(std::string_view name) const {
    const auto* e = bindings_.find(name);
    return e ? e->value.record : nullptr;
  }

  /// Only the value of the record bound to `name` (shared, not copied), or null when the name is unbound.
  std::shared_ptr<const nlohmann::json> get_artifact_value(std::string_view name) const {
    const auto* e = bindings_.find(name);
    return e ? e->value.record->shared_value() : nullptr;
  }

  bool has_artifact(std::string_view name) const { return bindings_.find(name) != nullptr; }
  std::size_t artifact_count() const noexcept { return bindings_.size(); }

  /// Every binding, in the order the names were first bound (O(n log n)).
  std::vector<NamedArtifact> list_artifacts() const {
    std::vector<std::pair<std::uint64_t, const Bindings::Entry*>> entries;
    entries.reserve(bindings_.size());
    bindings_.for_each([&entries](const Bindings::Entry& e) { entries.emplace_back(e.value.first_seq, &e); });
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<NamedArtifact> out;
    out.reserve(entries.size());
    for (const auto& [seq, e] : entries) out.push_back(NamedArtifact{e->key, e->value.record});
    return out;
  }

  /// True when `name` matches `[A-Za-z_][A-Za-z0-9_-]{0,127}`.
  static bool is_valid_name(std::string_view name) noexcept { return is_valid_artifact_name(name); }

  // ---- conversation ---------------------------------------------------------------------------------------------

  /// Appends a message stamped with the current time (of the context's clock).
  void add_message(Role role, std::string content) {
    add_message(Message{role, std::move(content), detail::now_ms(clock_.get())});
  }
  /// Appends a message as given (its own timestamp).
  void add_message(Message message) {
    if (run_) run_->record("context", "message", message);
    log_.push_back(std::move(message));
  }

  std::size_t message_count() const noexcept { return log_.size(); }
  /// The message at `index` (0 is the oldest); throws cairn::invalid_argument when out of range.
  const Message& message(std::size_t index) const {
    if (index >= log_.size()) {
      throw invalid_argument(fmt::format("message: index {} is out of range (the log holds {})", index, log_.size()));
    }
    return log_[index];
  }
  /// The whole log, oldest first.
  std::vector<Message> messages() const { return last_messages(log_.size()); }
  /// The newest `n` messages (fewer when the log is shorter), oldest first.
  std::vector<Message> last_messages(std::size_t n) const {
    const std::size_t size = log_.size();
    const std::size_t from = n >= size ? 0 : size - n;
    std::vector<Message> out;
    out.reserve(size - from);
    for (std::size_t i = from; i < size; ++i) out.push_back(log_[i]);
    return out;
  }

  // ---- fork and merge -------------------------------------------------------------------------------------------

  /// A child context that sees this context's bindings and messages as they are now. Later writes on either side
  /// stay invisible to the other. O(1) whatever the context holds. Logically const: the parent only takes a new
  /// edit token so that it never writes a trie node the child can see.
  ExecutionContext fork() const {
    ExecutionContext child(store_, tenant_id_, counter_, clock_, tick());
    child.parent_id_ = id_;
    child.observer_ = observer_;
    const std::uint64_t child_edit = tick();
    const std::uint64_t own_edit = tick();
    child.bindings_ = bindings_.share(child_edit, own_edit);
    child.log_ = log_.share(child_edit, own_edit);
    child.merged_messages_ = log_.size();
    return child;
  }

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
  void merge(const std::vector<std::reference_wrapper<ExecutionContext>>& children) {
    for (const ExecutionContext& c : children) {
      if (&c == this || c.parent_id_ != id_ || c.counter_ != counter_) {
        throw invalid_argument("merge: a child is not a fork of this context");
      }
    }
    // Work out the whole merge first, so that an attached run records it as one append (all or nothing) before
    // anything changes here.
    std::vector<std::pair<std::string, Binding>> rebinds;
    std::unordered_map<std::string_view, std::size_t> rebound;  // name -> index in rebinds
    std::vector<Message> messages;
    for (ExecutionContext& c : children) {
      std::unordered_set<std::string_view> done;
      for (const std::string& name : c.written_) {
        if (!done.insert(name).second) continue;
        Binding b = c.bindings_.find(name)->value;
        const auto earlier = rebound.find(name);  // an earlier child of this merge bound it too
        const auto* mine = bindings_.find(name);
        const Binding* current = earlier != rebound.end() ? &rebinds[earlier->second].second
                                 : mine                   ? &mine->value
                                                          : nullptr;
        if (current && current->write_seq >= b.write_seq) continue;
        if (current) b.first_seq = current->first_seq;
        if (earlier != rebound.end()) {
          rebinds[earlier->second].second = std::move(b);
        } else {
          rebound.emplace(name, rebinds.size());
          rebinds.emplace_back(name, std::move(b));
        }
      }
      for (std::size_t i = c.merged_messages_; i < c.log_.size(); ++i) messages.push_back(c.log_[i]);
    }
    if (run_ && (!rebinds.empty() || !messages.empty())) {
      std::vector<JournalEntry> entries;
      for (const auto& [name, b] : rebinds) entries.push_back(entry("bind", bind_json(name, b)));
      for (const auto& m : messages) entries.push_back(entry("message", m));
      run_->record_entries(std::move(entries));
    }
    for (auto& [name, b] : rebinds) {
      bindings_.set(name, std::move(b));
      if (parent_id_ != 0) written_.push_back(name);
    }
    for (auto& m : messages) log_.push_back(std::move(m));
    for (ExecutionContext& c : children) {
      c.written_.clear();
      c.merged_messages_ = c.log_.size();
    }
  }

  // ---- durable runs ---------------------------------------------------------------------------------------------

  /// Records this context in `run` from now on (see cairn/run/run.hpp): when the run holds a context already, this
  /// context's bindings, log and tool calls are replaced by the run's (the records are fetched from this context's
  /// store, which must hold them); otherwise what the context holds now is recorded. Every later binding, message
  /// and tool call is committed to the run before it takes effect here. Throws what Run::attach throws, and
  /// cairn::state_error when a bound record is missing from the store. The run must outlive the attachment
  /// (detach() or the context's end).
  void attach(Run& run) {
    if (run_) throw invalid_argument("attach: the context is attached to a run already");
    run.attach(static_cast<RunParticipant&>(*this));
    run_ = &run;
  }
  /// Stops recording (the run keeps what was recorded).
  void detach() noexcept {
    if (run_) run_->detach(static_cast<const RunParticipant&>(*this));
    run_ = nullptr;
  }
  /// The run this context records into, or null.
  Run* run() const noexcept { return run_; }

  /// The context as JSON: `{"bindings": [{"name", "id", "version", "first", "write"}...], "messages": [...],
  /// "calls": {...}}`, bindings in list_artifacts() order with the ordering keys merge() uses. A context restored
  /// from a run gives the same JSON, byte for byte, as the original did at the same point of the run.
  nlohmann::json state() const { return participant_state(); }

  /// The tool call `call_id` as the attached run recorded it, or nothing.
  std::optional<RecordedCall> recorded_call(const std::string& call_id) const {
    const auto it = calls_.find(call_id);
    if (it == calls_.end()) return std::nullopt;
    return it->second;
  }
  /// Calls that were recorded as intended but never as finished or failed: the process running them stopped in
  /// between, and whether the tool's effect happened is unknown. execute() will not run them again by itself.
  std::vector<RecordedCall> in_doubt_calls() const {
    std::vector<RecordedCall> out;
    for (const auto& [id, call] : calls_) {
      if (call.status == RecordedCall::Status::intended) out.push_back(call);
    }
    return out;
  }

  /// For execute(): records that `call` is about to run, before it runs.
  void record_call_intended(const std::string& call_id, const std::string& tool, const std::string& input_hash) {
    RecordedCall c{call_id, tool, input_hash, RecordedCall::Status::intended, {}, {}};
    if (run_) run_->record("context", "tool_intended", call_json(c), /*sync=*/true);  // committed before it runs
    calls_[call_id] = std::move(c);
  }
  /// For execute(): binds the stored outputs, logs one message per output and marks the call finished, as one
  /// recorded change.
  void record_call_finished(const std::string& call_id, const std::string& tool, const std::string& input_hash,
                            const std::vector<NamedArtifact>& outputs, const std::vector<Message>& messages) {
    RecordedCall c{call_id, tool, input_hash, RecordedCall::Status::finished, {}, {}};
    std::vector<std::pair<std::string, Binding>> binds;
    for (const auto& o : outputs) {
      check_name(o.name);
      c.outputs.push_back({o.name, {o.record->id(), o.record->version()}});
      const std::uint64_t seq = tick();
      const auto* existing = bindings_.find(o.name);
      binds.emplace_back(o.name, Binding{o.record, existing ? existing->value.first_seq : seq, seq});
    }
    if (run_) {
      nlohmann::json data = call_json(c);
      nlohmann::json bj = nlohmann::json::array();
      for (const auto& [name, b] : binds) bj.push_back(bind_json(name, b));
      data["bindings"] = std::move(bj);
      data["messages"] = messages;
      run_->record("context", "tool_finished", std::move(data));
    }
    for (auto& [name, b] : binds) {
      bindings_.set(name, std::move(b));
      if (parent_id_ != 0) written_.push_back(name);
    }
    for (const auto& m : messages) log_.push_back(m);
    calls_[call_id] = std::move(c);
  }
  /// For execute(): logs the failure message and marks the call failed, as one recorded change.
  void record_call_failed(const std::string& call_id, const std::string& tool, const std::string& input_hash,
                          const std::string& error, const Message& message) {
    RecordedCall c{call_id, tool, input_hash, RecordedCall::Status::failed, {}, error};
    if (run_) {
      nlohmann::json data = call_json(c);
      data["message"] = message;
      run_->record("context", "tool_failed", std::move(data));
    }
    log_.push_back(message);
    calls_[call_id] = std::move(c);
  }
  /// A fresh call id for a call that came without one: `call-<n>`, counting the calls this context recorded.
  std::string next_call_id() const { return fmt::format("call-{}", calls_.size() + 1); }

  // ---- resolution -----------------------------------------------------------------------------------------------

  /// `inputs` with every `@name` / `@name#/pointer` replaced by (a part of) that artifact's value and every `@@x`
  /// by `@x`, at any depth (see resolve.hpp for what counts as a reference). Throws cairn::artifact_not_found
  /// ("Artifact not found: @name at /args/0"), cairn::not_found for a pointer to nothing, cairn::parse_error for a
  /// malformed pointer and cairn::limit_exceeded for input nested deeper than `options.max_depth` or whose
  /// references would insert more than `options.max_resolved_bytes` of JSON text (checked before copying).
  ///
  ///     ctx.resolve({{"command", "node"}, {"args", {"@server_file"}}})  // {"args": ["/tmp/server.js"], ...}
  [[nodiscard]] nlohmann::json resolve(const nlohmann::json& inputs, const ResolveOptions& options = {}) const {
    if (!observer_) {
      auto lookup = [this](std::string_view name) -> const nlohmann::json* {
        const auto* e = bindings_.find(name);
        return e ? &e->value.record->value() : nullptr;
      };
      return detail::resolve_with(inputs, lookup, options);
    }
    std::uint64_t references = 0;
    auto counting = [this, &references](std::string_view name) -> const nlohmann::json* {
      ++references;
      const auto* e = bindings_.find(name);
      return e ? &e->value.record->value() : nullptr;
    };
    return detail::observe_call(
        observer_.get(), EventKind::resolve, "resolve", tenant_id_, std::string_view(),
        [&] { return detail::resolve_with(inputs, counting, options); },
        [&](Event& e, const nlohmann::json& out) {
          e.items = references;
          e.bytes_in = detail::json_bytes(inputs);
          e.bytes_out = detail::json_bytes(out);
        });
  }

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

  static void check_name(const std::string& name) {
    if (!is_valid_artifact_name(name)) {
      throw invalid_argument(fmt::format(
          "artifact name: '{}' is not valid (expected [A-Za-z_][A-Za-z0-9_-]{{0,127}})", detail::excerpt(name)));
    }
  }

  ArtifactPtr bind_stored(const std::string& name, ArtifactPtr stored) {
    const std::uint64_t seq = tick();
    const auto* existing = bindings_.find(name);
    Binding b{stored, existing ? existing->value.first_seq : seq, seq};
    if (run_) run_->record("context", "bind", bind_json(name, b));
    bindings_.set(name, std::move(b));
    if (parent_id_ != 0) written_.push_back(name);  // only a fork is ever merged
    return stored;
  }

  // ---- RunParticipant --------------------------------------------------------------------------------------------

  static JournalEntry entry(const char* kind, nlohmann::json data) {
    JournalEntry e;
    e.kind = std::string("context.") + kind;
    e.data = std::move(data);
    return e;
  }
  static nlohmann::json bind_json(const std::string& name, const Binding& b) {
    return {{"name", name}, {"id", b.record->id()}, {"version", b.record->version()}, {"first", b.first_seq},
            {"write", b.write_seq}};
  }
  static nlohmann::json call_json(const RecordedCall& c) {
    nlohmann::json outputs = nlohmann::json::array();
    for (const auto& [name, ref] : c.outputs) outputs.push_back({{"name", name}, {"id", ref.first}, {"version", ref.second}});
    nlohmann::json j = {{"call", c.call_id}, {"tool", c.tool}, {"input_hash", c.input_hash},
                        {"status", to_string(c.status)}, {"outputs", std::move(outputs)}};
    if (!c.error.empty()) j["error"] = c.error;
    return j;
  }
  static RecordedCall call_from_json(const nlohmann::json& j, RecordedCall::Status status) {
    RecordedCall c;
    c.call_id = j.at("call").get<std::string>();
    c.tool = j.at("tool").get<std::string>();
    c.input_hash = j.at("input_hash").get<std::string>();
    c.status = status;
    for (const auto& o : j.at("outputs")) {
      c.outputs.push_back({o.at("name").get<std::string>(), {o.at("id").get<std::string>(), o.at("version").get<std::uint64_t>()}});
    }
    if (const auto it = j.find("error"); it != j.end()) c.error = it->get<std::string>();
    return c;
  }

  // Binds as a recorded entry says, with the recorded ordering keys; the shared counter moves past them.
  void apply_bind(const nlohmann::json& j) {
    const std::string name = j.at("name").get<std::string>();
    const std::string id = j.at("id").get<std::string>();
    const auto version = j.at("version").get<std::uint64_t>();
    auto record = store_->fetch(id, tenant_id_, version);
    if (!record) {
      throw state_error(fmt::format("binding '{}': artifact '{}' version {} is not in the store of tenant '{}'",
                                    detail::excerpt(name), detail::excerpt(id), version, detail::excerpt(tenant_id_)));
    }
    Binding b{std::move(record), j.at("first").get<std::uint64_t>(), j.at("write").get<std::uint64_t>()};
    std::uint64_t seen = counter_->load(std::memory_order_relaxed);
    while (seen <= b.write_seq && !counter_->compare_exchange_weak(seen, b.write_seq + 1, std::memory_order_relaxed)) {
    }
    bindings_.set(name, std::move(b));
  }

  std::string participant_name() const override { return "context"; }
  void participant_detached() noexcept override { run_ = nullptr; }

  nlohmann::json participant_state() const override {
    std::vector<const Bindings::Entry*> entries;
    entries.reserve(bindings_.size());
    bindings_.for_each([&entries](const Bindings::Entry& e) { entries.push_back(&e); });
    std::sort(entries.begin(), entries.end(),
              [](const auto* a, const auto* b) { return a->value.first_seq < b->value.first_seq; });
    nlohmann::json bindings = nlohmann::json::array();
    for (const auto* e : entries) bindings.push_back(bind_json(e->key, e->value));
    nlohmann::json messages = nlohmann::json::array();
    for (std::size_t i = 0; i < log_.size(); ++i) messages.push_back(log_[i]);
    nlohmann::json calls = nlohmann::json::object();
    for (const auto& [id, c] : calls_) calls[id] = call_json(c);
    return {{"bindings", std::move(bindings)}, {"messages", std::move(messages)}, {"calls", std::move(calls)}};
  }

  void restore_participant(const nlohmann::json& state) override {
    const std::uint64_t edit = tick();
    bindings_ = Bindings(edit);
    log_ = Log(edit);
    written_.clear();
    merged_messages_ = 0;
    calls_.clear();
    for (const auto& b : state.at("bindings")) apply_bind(b);
    for (const auto& m : state.at("messages")) log_.push_back(m.get<Message>());
    for (const auto& [id, c] : state.at("calls").items()) {
      const std::string status = c.at("status").get<std::string>();
      calls_[id] = call_from_json(c, status == "finished" ? RecordedCall::Status::finished
                                     : status == "failed" ? RecordedCall::Status::failed
                                                          : RecordedCall::Status::intended);
    }
  }

  void apply_participant_entry(std::string_view kind, const JournalEntry& e) override {
    const nlohmann::json& d = e.data;
    if (kind == "bind") {
      apply_bind(d);
    } else if (kind == "message") {
      log_.push_back(d.get<Message>());
    } else if (kind == "tool_intended") {
      auto c = call_from_json(d, RecordedCall::Status::intended);
      calls_[c.call_id] = std::move(c);
    } else if (kind == "tool_finished") {
      for (const auto& b : d.at("bindings")) apply_bind(b);
      for (const auto& m : d.at("messages")) log_.push_back(m.get<Message>());
      auto c = call_from_json(d, RecordedCall::Status::finished);
      calls_[c.call_id] = std::move(c);
    } else if (kind == "tool_failed") {
      log_.push_back(d.at("message").get<Message>());
      auto c = call_from_json(d, RecordedCall::Status::failed);
      calls_[c.call_id] = std::move(c);
    } else {
      throw state_error(fmt::format("context: unknown journal entry kind 'context.{}'", kind));
    }
  }

  void take(ExecutionContext&& other) noexcept {
    store_ = std::move(other.store_);
    tenant_id_ = std::move(other.tenant_id_);
    counter_ = std::move(other.counter_);
    clock_ = std::move(other.clock_);
    observer_ = std::move(other.observer_);
    id_ = other.id_;
    parent_id_ = other.parent_id_;
    bindings_ = std::move(other.bindings_);
    log_ = std::move(other.log_);
    written_ = std::move(other.written_);
    merged_messages_ = other.merged_messages_;
    calls_ = std::move(other.calls_);
    run_ = std::exchange(other.run_, nullptr);
    if (run_) run_->moved(static_cast<const RunParticipant&>(other), static_cast<RunParticipant&>(*this));
  }

  std::shared_ptr<ArtifactStore> store_;
  std::string tenant_id_;
  std::shared_ptr<Counter> counter_;  // shared by a context and all its forks: sequence numbers and edit tokens
  std::shared_ptr<Clock> clock_;      // shared by a context and all its forks: message timestamps (null: system)
  std::shared_ptr<Observer> observer_;  // inherited by forks: resolve and tool_call events (null: none)
  std::uint64_t id_ = 0;
  std::uint64_t parent_id_ = 0;  // 0 for a context that is no fork
  // mutable: fork() moves the parent to a fresh edit token, which changes nothing it shows.
  mutable Bindings bindings_;
  mutable Log log_;
  std::vector<std::string> written_;  // names bound since the fork or the last merge into the parent
  std::size_t merged_messages_ = 0;   // messages up to here are the parent's, or were merged already
  std::map<std::string, RecordedCall> calls_;  // tool calls recorded while attached to a run
  Run* run_ = nullptr;
};

CAIRN_END_NAMESPACE
