// cairn — the function bodies of cairn/context/execution_context.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/context/execution_context.hpp"
#include "cairn/context/resolve-inl.hpp"
#include "cairn/detail/sha256.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE std::string_view to_string(Role role) noexcept {
  switch (role) {
    case Role::user: return "user";
    case Role::assistant: return "assistant";
    case Role::system: return "system";
    case Role::tool: return "tool";
  }
  return "system";
}

CAIRN_INLINE Role role_from_string(std::string_view text) {
  for (Role r : {Role::user, Role::assistant, Role::system, Role::tool}) {
    if (to_string(r) == text) return r;
  }
  throw invalid_argument(fmt::format("role: '{}' is not one of user, assistant, system, tool", detail::excerpt(text)));
}

CAIRN_INLINE void to_json(nlohmann::json& j, const Message& m) {
  j = {{"role", to_string(m.role)}, {"content", m.content}, {"timestamp", m.timestamp}};
}

CAIRN_INLINE void from_json(const nlohmann::json& j, Message& m) {
  m.role = role_from_string(j.at("role").get<std::string>());
  m.content = j.at("content").get<std::string>();
  m.timestamp = j.at("timestamp").get<std::int64_t>();
}

CAIRN_INLINE std::string_view to_string(RecordedCall::Status s) noexcept {
  switch (s) {
    case RecordedCall::Status::intended: return "intended";
    case RecordedCall::Status::finished: return "finished";
    case RecordedCall::Status::failed: return "failed";
  }
  return "intended";
}

namespace detail {

CAIRN_INLINE std::string call_digest(std::string_view domain, std::initializer_list<std::string_view> parts) {
  std::string text(domain);
  for (std::string_view p : parts) {
    text += std::to_string(p.size());
    text.push_back(':');
    text.append(p.data(), p.size());
  }
  return hex_prefix(sha256(text), 16);
}

CAIRN_INLINE std::string call_key(std::string_view tenant, std::string_view run_id, std::string_view call_id) {
  return call_digest("cairn.tool_call.v1", {tenant, run_id, call_id});
}

CAIRN_INLINE std::string call_output_id(std::string_view tenant, std::string_view run_id, std::string_view call_id,
                                        std::string_view name) {
  return "tool-" + call_digest("cairn.tool_output.v1", {tenant, run_id, call_id, name});
}

}  // namespace detail

CAIRN_INLINE ExecutionContext::ExecutionContext(std::shared_ptr<ArtifactStore> store, std::string tenant_id,
                                                std::shared_ptr<Clock> clock)
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

CAIRN_INLINE ExecutionContext::ExecutionContext(std::string tenant_id, std::shared_ptr<Clock> clock)
    : tenant_id_(std::move(tenant_id)), counter_(std::make_shared<Counter>(1)), clock_(std::move(clock)) {
  detail::check_tenant(tenant_id_);
  id_ = tick();
  const std::uint64_t edit = tick();
  bindings_ = Bindings(edit);
  log_ = Log(edit);
}

CAIRN_INLINE nlohmann::json ExecutionContext::resolve(const nlohmann::json& inputs,
                                                      const ResolveOptions& options) const {
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

CAIRN_INLINE ArtifactStore& ExecutionContext::require_store(std::string_view operation) const {
  if (!store_) {
    throw state_error(
        fmt::format("{}: this ExecutionContext has no artifact store (it was made for a conversation "
                    "only, as ExecutionContext(tenant)); give it one to store or bind artifacts",
                    operation));
  }
  return *store_;
}

CAIRN_INLINE ArtifactPtr ExecutionContext::add_artifact(const std::string& name, const ArtifactRecord& record) {
  check_name(name);
  (void)require_store("add_artifact");
  const std::uint64_t seq = tick();
  return bind_stored(name, store_to_bind(name, *record.to_builder().tenant_id(tenant_id_).build(), seq), seq);
}

CAIRN_INLINE ArtifactPtr ExecutionContext::add_artifact(const std::string& name, ArtifactRecord::Builder builder) {
  check_name(name);
  (void)require_store("add_artifact");
  const std::uint64_t seq = tick();
  return bind_stored(name, store_to_bind(name, *builder.tenant_id(tenant_id_).build(), seq), seq);
}

namespace detail {
// True when two records hold the same thing: every field but the version and the time of storing.
CAIRN_INLINE bool same_content(const ArtifactRecord& a, const ArtifactRecord& b) {
  nlohmann::json x = a, y = b;
  x.erase("version");
  x.erase("created_at");
  y.erase("version");
  y.erase("created_at");
  return x == y;
}
}  // namespace detail

CAIRN_INLINE ArtifactPtr ExecutionContext::store_to_bind(const std::string& name, const ArtifactRecord& record,
                                                         std::uint64_t seq) {
  ArtifactStore& store = *store_;
  if (!run_) return store.store(record);
  if (record.id().empty()) {
    // Nothing but a lost attempt of this very step (same run, name and ordering key) can have stored under this id:
    // a committed binding would have moved the ordering key on.
    auto mine = record.to_builder()
                    .id("bind-" + detail::call_digest("cairn.binding.v1",
                                                      {tenant_id_, run_->run_id(), name, std::to_string(seq)}))
                    .build();
    try {
      return store.store_if(*mine, ArtifactStore::absent);
    } catch (const conflict&) {
    }
    if (auto found = store.fetch(mine->id(), tenant_id_); found && detail::same_content(*found, *mine)) return found;
    try {
      store.remove(mine->id(), tenant_id_);
    } catch (const not_found&) {  // another worker removed it first
    }
    return store.store_if(*mine, ArtifactStore::absent);
  }
  // The host's id: the versions above the one `name` is bound to (0 when it is bound to none of this id) that hold
  // this content are what this step, or a lost attempt of it, stored: the oldest of them is reused. A lost step
  // that added the same record twice left two such versions; done again, its first add finds the first and its
  // second add (bound to that one by then) the second, as an uninterrupted run did. Conditional, so that of two
  // workers doing the same step at once one stores and the other finds it.
  const auto* bound = bindings_.find(name);
  const std::uint64_t bound_version =
      bound && bound->value.record->id() == record.id() ? bound->value.record->version() : 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const auto latest = store.fetch(record.id(), tenant_id_);
    if (latest && latest->version() > bound_version && detail::same_content(*latest, record)) {
      ArtifactPtr oldest = latest;
      for (std::uint64_t v = latest->version() - 1; v > bound_version; --v) {
        auto older = store.fetch(record.id(), tenant_id_, v);
        if (!older || !detail::same_content(*older, record)) break;
        oldest = std::move(older);
      }
      return oldest;
    }
    try {
      return store.store_if(record, latest ? latest->version() : ArtifactStore::absent);
    } catch (const conflict&) {  // another writer stored a version meanwhile: look again
    }
  }
  return store.store(record);
}

CAIRN_INLINE void ExecutionContext::bind(const std::string& name, ArtifactPtr stored) {
  check_name(name);
  (void)require_store("bind");
  if (!stored) throw invalid_argument(fmt::format("bind '{}': record must not be null", name));
  if (stored->tenant_id() != tenant_id_) {
    throw invalid_argument(fmt::format("bind '{}': the record belongs to another tenant", name));
  }
  if (stored->id().empty() || stored->version() == 0) {
    throw invalid_argument(fmt::format("bind '{}': the record has not been stored (use add_artifact)", name));
  }
  bind_stored(name, std::move(stored));
}

CAIRN_INLINE ArtifactPtr ExecutionContext::get_artifact(std::string_view name) const {
  const auto* e = bindings_.find(name);
  return e ? e->value.record : nullptr;
}

CAIRN_INLINE std::shared_ptr<const nlohmann::json> ExecutionContext::get_artifact_value(std::string_view name) const {
  const auto* e = bindings_.find(name);
  return e ? e->value.record->shared_value() : nullptr;
}

CAIRN_INLINE std::vector<NamedArtifact> ExecutionContext::list_artifacts() const {
  std::vector<std::pair<std::uint64_t, const Bindings::Entry*>> entries;
  entries.reserve(bindings_.size());
  bindings_.for_each([&entries](const Bindings::Entry& e) { entries.emplace_back(e.value.first_seq, &e); });
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<NamedArtifact> out;
  out.reserve(entries.size());
  for (const auto& [seq, e] : entries) out.push_back(NamedArtifact{e->key, e->value.record});
  return out;
}

CAIRN_INLINE void ExecutionContext::add_message(Role role, std::string content) {
  add_message(Message{role, std::move(content), detail::now_ms(clock_.get())});
}

CAIRN_INLINE void ExecutionContext::add_message(Message message) {
  if (run_) run_->record("context", "message", message);
  log_.push_back(std::move(message));
}

CAIRN_INLINE const Message& ExecutionContext::message(std::size_t index) const {
  if (index >= log_.size()) {
    throw invalid_argument(fmt::format("message: index {} is out of range (the log holds {})", index, log_.size()));
  }
  return log_[index];
}

CAIRN_INLINE std::vector<Message> ExecutionContext::last_messages(std::size_t n) const {
  const std::size_t size = log_.size();
  const std::size_t from = n >= size ? 0 : size - n;
  std::vector<Message> out;
  out.reserve(size - from);
  for (std::size_t i = from; i < size; ++i) out.push_back(log_[i]);
  return out;
}

CAIRN_INLINE ExecutionContext ExecutionContext::fork() const {
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

CAIRN_INLINE void ExecutionContext::merge(const std::vector<std::reference_wrapper<ExecutionContext>>& children) {
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

CAIRN_INLINE void ExecutionContext::attach(Run& run) {
  if (run_) throw invalid_argument("attach: the context is attached to a run already");
  run.attach(static_cast<RunParticipant&>(*this));
  run_ = &run;
}

CAIRN_INLINE void ExecutionContext::detach() noexcept {
  if (run_) run_->detach(static_cast<const RunParticipant&>(*this));
  run_ = nullptr;
}

CAIRN_INLINE std::optional<RecordedCall> ExecutionContext::recorded_call(const std::string& call_id) const {
  const auto it = calls_.find(call_id);
  if (it == calls_.end()) return std::nullopt;
  return it->second;
}

CAIRN_INLINE std::optional<std::int64_t> ExecutionContext::lease_end(const RecordedCall& c) const {
  if (!run_ || c.status != RecordedCall::Status::intended || c.claimed_at == 0) return std::nullopt;
  const auto lease = run_->options().call_lease.count();
  if (lease <= 0) return std::nullopt;
  const std::int64_t ends = c.claimed_at + static_cast<std::int64_t>(lease);
  if (run_->now_ms() >= ends) return std::nullopt;
  return ends;
}

CAIRN_INLINE void ExecutionContext::check_not_in_flight(const RecordedCall& c, std::string_view what) const {
  const auto ends = lease_end(c);
  if (!ends) return;
  const std::int64_t now = run_->now_ms();
  throw call_in_flight(
      fmt::format("{}: call '{}' of {} in run '{}' is in flight: its attempt {} was claimed {} ms ago and its lease "
                  "(RunOptions::call_lease, {} ms) ends in {} ms, at {} ms by the journal's clock; another worker may "
                  "be running it. Wait until then and reopen the run",
                  what, detail::excerpt(c.call_id), c.tool, detail::excerpt(run_->run_id()), c.attempt,
                  now - c.claimed_at, run_->options().call_lease.count(), *ends - now, *ends),
      c, run_->seq(), *ends);
}

CAIRN_INLINE std::vector<RecordedCall> ExecutionContext::in_doubt_calls() const {
  std::vector<RecordedCall> out;
  for (const auto& [id, call] : calls_) {
    if (call.status == RecordedCall::Status::intended && !lease_end(call)) out.push_back(call);
  }
  return out;
}

CAIRN_INLINE std::vector<RecordedCall> ExecutionContext::in_flight_calls() const {
  std::vector<RecordedCall> out;
  for (const auto& [id, call] : calls_) {
    if (lease_end(call)) out.push_back(call);
  }
  return out;
}

CAIRN_INLINE void ExecutionContext::set_call(RecordedCall c) {
  const bool settled = c.status != RecordedCall::Status::intended;
  auto [it, added] = calls_.try_emplace(c.call_id);
  const bool was_settled = !added && it->second.status != RecordedCall::Status::intended;
  it->second = std::move(c);
  if (settled && !was_settled) ++settled_calls_;
  if (!settled && was_settled) --settled_calls_;
}

CAIRN_INLINE JournalEntry ExecutionContext::claim_entry(const char* kind, nlohmann::json data) const {
  JournalEntry e = entry(kind, std::move(data));
  e.time = run_->now_ms();  // kept by append: the lease is counted from the time the journal holds
  return e;
}

CAIRN_INLINE void ExecutionContext::record_call_intended(const std::string& call_id, const std::string& tool,
                                                         const std::string& input_hash) {
  RecordedCall c{call_id, tool, input_hash, RecordedCall::Status::intended, {}, {}};
  if (run_) {
    std::vector<JournalEntry> entries;
    entries.push_back(claim_entry("tool_intended", call_json(c)));
    c.claimed_at = entries.front().time;
    entries.front().data = call_json(c);
    run_->record_entries(std::move(entries), /*sync=*/true);  // committed before it runs
  }
  set_call(std::move(c));
}

CAIRN_INLINE void ExecutionContext::record_call_retry(const std::string& call_id, std::uint32_t attempt) {
  const auto it = calls_.find(call_id);
  if (it == calls_.end() || it->second.status != RecordedCall::Status::intended) {
    throw state_error(
        fmt::format("call '{}': only a call in doubt can be claimed for another attempt", detail::excerpt(call_id)));
  }
  check_not_in_flight(it->second, "claiming a retry");
  std::int64_t claimed_at = it->second.claimed_at;
  if (run_) {
    std::vector<JournalEntry> entries;
    entries.push_back(claim_entry("tool_retry", nlohmann::json{{"call", call_id}, {"attempt", attempt}}));
    claimed_at = entries.front().time;
    run_->record_entries(std::move(entries), /*sync=*/true);  // committed before the attempt does anything
  }
  it->second.attempt = attempt;
  it->second.claimed_at = claimed_at;
}

CAIRN_INLINE void ExecutionContext::record_call_finished(const std::string& call_id, const std::string& tool,
                                                         const std::string& input_hash,
                                                         const std::vector<NamedArtifact>& outputs,
                                                         const std::vector<Message>& messages) {
  RecordedCall c{call_id, tool, input_hash, RecordedCall::Status::finished, {}, {}, attempt_of(call_id)};
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
  set_call(std::move(c));
}

CAIRN_INLINE void ExecutionContext::record_call_failed(const std::string& call_id, const std::string& tool,
                                                       const std::string& input_hash, const std::string& error,
                                                       const Message& message) {
  RecordedCall c{call_id, tool, input_hash, RecordedCall::Status::failed, {}, error, attempt_of(call_id)};
  if (run_) {
    nlohmann::json data = call_json(c);
    data["message"] = message;
    run_->record("context", "tool_failed", std::move(data));
  }
  log_.push_back(message);
  set_call(std::move(c));
}

CAIRN_INLINE void ExecutionContext::check_name(const std::string& name) {
  if (!is_valid_artifact_name(name)) {
    throw invalid_argument(fmt::format("artifact name: '{}' is not valid (expected [A-Za-z_][A-Za-z0-9_-]{{0,127}})",
                                       detail::excerpt(name)));
  }
}

CAIRN_INLINE ArtifactPtr ExecutionContext::bind_stored(const std::string& name, ArtifactPtr stored) {
  return bind_stored(name, std::move(stored), tick());
}

CAIRN_INLINE ArtifactPtr ExecutionContext::bind_stored(const std::string& name, ArtifactPtr stored, std::uint64_t seq) {
  const auto* existing = bindings_.find(name);
  Binding b{stored, existing ? existing->value.first_seq : seq, seq};
  if (run_) run_->record("context", "bind", bind_json(name, b));
  bindings_.set(name, std::move(b));
  if (parent_id_ != 0) written_.push_back(name);  // only a fork is ever merged
  return stored;
}

CAIRN_INLINE JournalEntry ExecutionContext::entry(const char* kind, nlohmann::json data) {
  JournalEntry e;
  e.kind = std::string("context.") + kind;
  e.data = std::move(data);
  return e;
}

CAIRN_INLINE nlohmann::json ExecutionContext::bind_json(const std::string& name, const Binding& b) {
  return {{"name", name},
          {"id", b.record->id()},
          {"version", b.record->version()},
          {"first", b.first_seq},
          {"write", b.write_seq}};
}

CAIRN_INLINE nlohmann::json ExecutionContext::call_json(const RecordedCall& c) {
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& [name, ref] : c.outputs)
    outputs.push_back({{"name", name}, {"id", ref.first}, {"version", ref.second}});
  nlohmann::json j = {{"call", c.call_id},
                      {"tool", c.tool},
                      {"input_hash", c.input_hash},
                      {"status", to_string(c.status)},
                      {"outputs", std::move(outputs)}};
  if (!c.error.empty()) j["error"] = c.error;
  // Only an unsettled call needs its attempt (the next one is one more) and when it was claimed (its lease); a
  // settled call looks as it would have in a run that never crashed.
  if (c.attempt > 1 && c.status == RecordedCall::Status::intended) j["attempt"] = c.attempt;
  if (c.claimed_at != 0 && c.status == RecordedCall::Status::intended) j["claimed_at"] = c.claimed_at;
  return j;
}

CAIRN_INLINE const nlohmann::json& ExecutionContext::recorded(const nlohmann::json& j, const char* key,
                                                              nlohmann::json::value_t type, std::string_view where) {
  using value_t = nlohmann::json::value_t;
  if (!j.is_object()) {
    throw state_error(fmt::format("{}: expected an object, got {}", where, detail::excerpt(j.dump(), 60)));
  }
  const auto it = j.find(key);
  if (it == j.end()) throw state_error(fmt::format("{}: '{}' is missing", where, key));
  const bool ok = type == value_t::number_unsigned  ? it->is_number_unsigned()
                  : type == value_t::number_integer ? it->is_number_integer()
                                                    : it->type() == type;
  if (!ok) {
    const char* expected = type == value_t::number_unsigned  ? "a non-negative integer"
                           : type == value_t::number_integer ? "an integer"
                           : type == value_t::string         ? "a string"
                           : type == value_t::array          ? "an array"
                                                             : "an object";
    throw state_error(
        fmt::format("{}: '{}' must be {}, got {}", where, key, expected, detail::excerpt(it->dump(), 60)));
  }
  return *it;
}

CAIRN_INLINE Message ExecutionContext::message_from_json(const nlohmann::json& j, std::string_view where) {
  using value_t = nlohmann::json::value_t;
  Message m;
  try {
    m.role = role_from_string(recorded(j, "role", value_t::string, where).get<std::string>());
  } catch (const invalid_argument& e) {
    throw state_error(fmt::format("{}: {}", where, e.what()));
  }
  m.content = recorded(j, "content", value_t::string, where).get<std::string>();
  m.timestamp = recorded(j, "timestamp", value_t::number_integer, where).get<std::int64_t>();
  return m;
}

CAIRN_INLINE RecordedCall ExecutionContext::call_from_json(const nlohmann::json& j, RecordedCall::Status status) {
  using value_t = nlohmann::json::value_t;
  const std::string_view where = "tool call";
  RecordedCall c;
  c.call_id = recorded(j, "call", value_t::string, where).get<std::string>();
  c.tool = recorded(j, "tool", value_t::string, where).get<std::string>();
  c.input_hash = recorded(j, "input_hash", value_t::string, where).get<std::string>();
  c.status = status;
  const auto& outputs = recorded(j, "outputs", value_t::array, where);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string at = fmt::format("tool call '{}': outputs[{}]", detail::excerpt(c.call_id), i);
    const auto& o = outputs[i];
    c.outputs.push_back({recorded(o, "name", value_t::string, at).get<std::string>(),
                         {recorded(o, "id", value_t::string, at).get<std::string>(),
                          recorded(o, "version", value_t::number_unsigned, at).get<std::uint64_t>()}});
  }
  if (j.contains("error")) c.error = recorded(j, "error", value_t::string, where).get<std::string>();
  if (j.contains("attempt")) c.attempt = recorded(j, "attempt", value_t::number_unsigned, where).get<std::uint32_t>();
  if (status == RecordedCall::Status::intended && j.contains("claimed_at")) {
    c.claimed_at = recorded(j, "claimed_at", value_t::number_integer, where).get<std::int64_t>();
  }
  return c;
}

CAIRN_INLINE void ExecutionContext::apply_bind(const nlohmann::json& j, std::string_view where) {
  using value_t = nlohmann::json::value_t;
  std::string name = recorded(j, "name", value_t::string, where).get<std::string>();
  RecordedBinding b{recorded(j, "id", value_t::string, where).get<std::string>(),
                    recorded(j, "version", value_t::number_unsigned, where).get<std::uint64_t>(),
                    recorded(j, "first", value_t::number_unsigned, where).get<std::uint64_t>(),
                    recorded(j, "write", value_t::number_unsigned, where).get<std::uint64_t>()};
  std::uint64_t seen = counter_->load(std::memory_order_relaxed);
  while (seen <= b.write_seq && !counter_->compare_exchange_weak(seen, b.write_seq + 1, std::memory_order_relaxed)) {
  }
  restoring_[std::move(name)] = std::move(b);
}

CAIRN_INLINE void ExecutionContext::participant_restored() {
  for (auto& [name, b] : restoring_) {
    auto record = require_store("restoring a binding").fetch(b.id, tenant_id_, b.version);
    if (!record) {
      throw state_error(fmt::format("binding '{}': artifact '{}' version {} is not in the store of tenant '{}'",
                                    detail::excerpt(name), detail::excerpt(b.id), b.version,
                                    detail::excerpt(tenant_id_)));
    }
    bindings_.set(name, Binding{std::move(record), b.first_seq, b.write_seq});
  }
  restoring_.clear();
}

CAIRN_INLINE nlohmann::json ExecutionContext::participant_state() const {
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

CAIRN_INLINE void ExecutionContext::restore_participant(const nlohmann::json& state) {
  using value_t = nlohmann::json::value_t;
  const std::string_view where = "context state";
  const auto& bindings = recorded(state, "bindings", value_t::array, where);
  const auto& messages = recorded(state, "messages", value_t::array, where);
  const auto& calls = recorded(state, "calls", value_t::object, where);
  // A fresh map under this context's own edit token: no fork shares a node made under it, and taking a new token
  // would move the ordering counter a step past where an uninterrupted context's stands.
  const std::uint64_t edit = bindings_.edit();
  bindings_ = Bindings(edit);
  log_ = Log(edit);
  written_.clear();
  merged_messages_ = 0;
  calls_.clear();
  settled_calls_ = 0;
  restoring_.clear();
  std::size_t i = 0;
  try {
    for (; i < bindings.size(); ++i) apply_bind(bindings[i], "binding");
  } catch (const state_error& e) {
    throw state_error(fmt::format("{}: bindings[{}]: {}", where, i, e.what()));
  }
  try {
    for (i = 0; i < messages.size(); ++i) log_.push_back(message_from_json(messages[i], "message"));
  } catch (const state_error& e) {
    throw state_error(fmt::format("{}: messages[{}]: {}", where, i, e.what()));
  }
  for (const auto& [id, c] : calls.items()) {
    const std::string status = recorded(c, "status", value_t::string, where).get<std::string>();
    if (status != "intended" && status != "finished" && status != "failed") {
      throw state_error(fmt::format("{}: call '{}' has status '{}' (expected intended, finished or failed)", where,
                                    detail::excerpt(id), detail::excerpt(status)));
    }
    auto call = call_from_json(c, status == "finished" ? RecordedCall::Status::finished
                                  : status == "failed" ? RecordedCall::Status::failed
                                                       : RecordedCall::Status::intended);
    if (call.call_id != id) {
      throw state_error(fmt::format("{}: call '{}' is recorded under '{}'", where, detail::excerpt(call.call_id),
                                    detail::excerpt(id)));
    }
    set_call(std::move(call));
  }
}

CAIRN_INLINE void ExecutionContext::apply_participant_entry(std::string_view kind, const JournalEntry& e) {
  using value_t = nlohmann::json::value_t;
  const nlohmann::json& d = e.data;
  if (kind == "bind") {
    apply_bind(d, "context.bind");
  } else if (kind == "message") {
    log_.push_back(message_from_json(d, "context.message"));
  } else if (kind == "tool_intended") {
    auto c = call_from_json(d, RecordedCall::Status::intended);
    c.claimed_at = e.time;  // the lease counts from the journal's time (a journal of an older cairn has no field)
    set_call(std::move(c));
  } else if (kind == "tool_finished") {
    const auto& bindings = recorded(d, "bindings", value_t::array, "context.tool_finished");
    const auto& messages = recorded(d, "messages", value_t::array, "context.tool_finished");
    auto c = call_from_json(d, RecordedCall::Status::finished);
    for (const auto& b : bindings) apply_bind(b, "context.tool_finished: bindings");
    for (const auto& m : messages) log_.push_back(message_from_json(m, "context.tool_finished: messages"));
    set_call(std::move(c));
  } else if (kind == "tool_retry") {
    const auto it = calls_.find(d.at("call").get<std::string>());
    if (it == calls_.end()) throw state_error("a retry claim of a call the run never recorded as intended");
    it->second.attempt = d.at("attempt").get<std::uint32_t>();
    it->second.claimed_at = e.time;
  } else if (kind == "tool_failed") {
    auto c = call_from_json(d, RecordedCall::Status::failed);
    log_.push_back(message_from_json(recorded(d, "message", value_t::object, "context.tool_failed"),
                                     "context.tool_failed: message"));
    set_call(std::move(c));
  } else {
    throw state_error(fmt::format("context: unknown journal entry kind 'context.{}'", kind));
  }
}

CAIRN_INLINE void ExecutionContext::take(ExecutionContext&& other) noexcept {
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
  settled_calls_ = std::exchange(other.settled_calls_, 0);
  restoring_ = std::move(other.restoring_);
  run_ = std::exchange(other.run_, nullptr);
  if (run_) run_->moved(static_cast<const RunParticipant&>(other), static_cast<RunParticipant&>(*this));
}

CAIRN_INLINE bool operator==(const Message& a, const Message& b) {
  return a.role == b.role && a.content == b.content && a.timestamp == b.timestamp;
}

CAIRN_INLINE std::string ExecutionContext::next_call_id() const { return fmt::format("call-{}", settled_calls_ + 1); }

CAIRN_INLINE std::uint32_t ExecutionContext::attempt_of(const std::string& call_id) const {
  const auto it = calls_.find(call_id);
  return it == calls_.end() ? 1 : it->second.attempt;
}

CAIRN_END_NAMESPACE
