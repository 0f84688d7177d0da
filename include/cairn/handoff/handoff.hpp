// cairn — Handoff: passing work to another agent, with large results kept in the store behind references.
//
// A host wires a team of agents with it in a few lines: the manager's history holds references, each target sees
// the artifacts under its own reveal policy, and whatever a target hands back as an ARTIFACT block is stored and
// replaced by a reference before it reaches the manager.
//
//     cairn::HandoffOptions options;
//     options.id_prefix = "draft";
//     cairn::Handoff handoff(store, "acme", options);
//     cairn::HandoffTarget writer{"writer", write_fn, cairn::RevealPolicy::summary};
//     cairn::HandoffTarget analyst{"analyst", analyse_fn, cairn::RevealPolicy::full};
//     history.push_back({"manager", "Draft an issue for dark mode"});
//     history.push_back({"writer", handoff.transfer(writer, history).text});   // <artifact id="draft_k3x9" … />
//     history.push_back({"manager", "Check it for duplicates"});
//     history.push_back({"analyst", handoff.transfer(analyst, history).text}); // the analyst saw the full draft
//     std::cout << handoff.expand_references(final_answer).text;               // the user sees the draft too
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/clock.hpp"
#include "cairn/detail/random.hpp"
#include "cairn/error.hpp"
#include "cairn/handoff/artifact_block.hpp"
#include "cairn/handoff/reference.hpp"
#include "cairn/handoff/reveal.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// One message of the history a handoff passes on. `role` is free text ("user", "manager", "writer"...).
struct HandoffMessage {
  std::string role;
  std::string content;
};

/// An agent as the host provides it: takes its whole input as text, returns its reply.
using AgentFunction = std::function<std::string(const std::string& input)>;

/// An agent that work can be handed to.
struct HandoffTarget {
  std::string name;                             ///< the agent's id; recorded as created_by of what it hands back
  AgentFunction agent;                          ///< called with the prepared input
  RevealPolicy policy = RevealPolicy::summary;  ///< what it sees of the artifacts its input references
};

/// How a Handoff names artifacts and what it accepts.
struct HandoffOptions {
  std::string id_prefix = "artifact";  ///< ids are `<id_prefix>_<id_length random [a-z0-9]>`
  std::size_t id_length = 4;           ///< 1 to 64
  int max_id_attempts = 16;            ///< random ids tried before giving up when all are taken
  ReplyLimits reply_limits;            ///< applied to every reply
  RevealOptions reveal_options;        ///< applied to every input and every expansion
  std::shared_ptr<IdGenerator> ids{};  ///< draws the random part of ids (IdGenerator::token); null: the CSPRNG
};

/// What a handoff produced.
struct HandoffResult {
  std::string text;                     ///< for the caller's history: the reference, or the reply when plain text
  ArtifactPtr artifact;                 ///< the stored artifact; null when the reply was plain text
  std::string input;                    ///< what the target was given
  std::vector<std::string> unresolved;  ///< ids in the input that could not be revealed to the target
};

/// Hands work to agents and keeps their large results in an ArtifactStore, all within one tenant.
/// Thread-safe: it holds no mutable state, and every ArtifactStore is thread-safe; targets are called on the
/// calling thread.
class Handoff {
 public:
  /// Throws cairn::invalid_argument for a null store, an empty tenant, a prefix that is not
  /// `[A-Za-z0-9][A-Za-z0-9_-]{0,63}`, an id_length outside 1..64 or a max_id_attempts below 1.
  Handoff(std::shared_ptr<ArtifactStore> store, std::string tenant_id, HandoffOptions options = {});

  /// Prepares the target's input from `history` under the target's policy, calls the target, and accepts its
  /// reply (see accept_reply). Throws cairn::invalid_argument for a target without a name or function; whatever
  /// the target throws passes through, and nothing is stored then.
  HandoffResult transfer(const HandoffTarget& target, const std::vector<HandoffMessage>& history) const;

  /// The history as one text (format_history) with its references rewritten under `policy`.
  RevealResult prepare_input(const std::vector<HandoffMessage>& history, RevealPolicy policy) const;

  /// Parses an agent's reply: an ARTIFACT block is stored (store_artifact) and its reference returned as `text`;
  /// anything else comes back unchanged. Throws cairn::limit_exceeded for a reply over the limits.
  HandoffResult accept_reply(std::string_view reply, const std::string& agent) const;

  /// Stores a parsed block as a `document` record under a fresh id: the summary is its description, the first
  /// line of the summary (or of the content, when there is no summary) cut to 500 characters its title, `agent`
  /// its created_by, a Markdown/JSON/... fence's info string its mime_type. Throws cairn::invalid_artifact for
  /// an agent name that is not a valid created_by, and cairn::limit_exceeded after `max_id_attempts` ids that were
  /// all taken.
  ArtifactPtr store_artifact(const ArtifactBlock& block, const std::string& agent) const;

  /// A random id of the configured form (`<id_prefix>_<id_length characters>`); store_artifact takes it only if
  /// the tenant does not use it yet.
  std::string new_id() const;

  /// reveal() and expand_references() in this handoff's store and tenant.
  RevealResult reveal(std::string_view text, RevealPolicy policy) const;
  RevealResult expand_references(std::string_view text) const;

  /// Messages as `role: content` (just the content when the role is empty), separated by blank lines.
  static std::string format_history(const std::vector<HandoffMessage>& history);

  const std::shared_ptr<ArtifactStore>& store() const noexcept { return store_; }
  const std::string& tenant_id() const noexcept { return tenant_id_; }
  const HandoffOptions& options() const noexcept { return options_; }

 private:
  std::shared_ptr<ArtifactStore> store_;
  std::string tenant_id_;
  HandoffOptions options_;
};

namespace detail::handoff {

inline constexpr char id_alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";

/// `text` cut to at most `max` Unicode code points, never inside a UTF-8 sequence.
inline std::string_view utf8_prefix(std::string_view text, std::size_t max) noexcept {
  std::size_t points = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      if (points == max) return text.substr(0, i);
      ++points;
    }
  }
  return text;
}

/// The first non-blank line of `text`, trimmed.
inline std::string_view first_line(std::string_view text) noexcept {
  LineCursor c(text);
  while (!c.done()) {
    const std::string_view l = trim_blanks(c.next());
    if (!l.empty()) return l;
  }
  return {};
}

/// The media type a fence's info string names, or "" when it names none cairn knows.
inline std::string_view mime_for_fence(std::string_view info) noexcept {
  struct Entry {
    std::string_view info, mime;
  };
  static constexpr Entry table[] = {
      {"markdown", "text/markdown"}, {"md", "text/markdown"},      {"json", "application/json"},
      {"html", "text/html"},         {"csv", "text/csv"},          {"text", "text/plain"},
      {"txt", "text/plain"},         {"plain", "text/plain"},      {"yaml", "application/yaml"},
      {"yml", "application/yaml"},   {"xml", "application/xml"},   {"python", "text/x-python"},
      {"py", "text/x-python"},       {"cpp", "text/x-c++src"},     {"c++", "text/x-c++src"},
      {"sql", "application/sql"},    {"javascript", "text/javascript"}, {"js", "text/javascript"},
  };
  for (const auto& e : table) {
    if (e.info.size() == info.size() && starts_with_nocase(info, e.info)) return e.mime;
  }
  return {};
}

}  // namespace detail::handoff

inline Handoff::Handoff(std::shared_ptr<ArtifactStore> store, std::string tenant_id, HandoffOptions options)
    : store_(std::move(store)), tenant_id_(std::move(tenant_id)), options_(std::move(options)) {
  if (!store_) throw invalid_argument("Handoff: store must not be null");
  detail::check_tenant(tenant_id_);
  const std::string& prefix = options_.id_prefix;
  bool prefix_ok = !prefix.empty() && prefix.size() <= 64 &&
                   (detail::is_ascii_alpha(prefix[0]) || detail::is_ascii_digit(prefix[0]));
  for (char c : prefix) {
    prefix_ok = prefix_ok && (detail::is_ascii_alpha(c) || detail::is_ascii_digit(c) || c == '_' || c == '-');
  }
  if (!prefix_ok) {
    throw invalid_argument(fmt::format(
        "HandoffOptions::id_prefix: '{}' must match [A-Za-z0-9][A-Za-z0-9_-]{{0,63}}", detail::excerpt(prefix)));
  }
  if (options_.id_length < 1 || options_.id_length > 64) {
    throw invalid_argument(
        fmt::format("HandoffOptions::id_length: must be between 1 and 64 (got {})", options_.id_length));
  }
  if (options_.max_id_attempts < 1) {
    throw invalid_argument(
        fmt::format("HandoffOptions::max_id_attempts: must be at least 1 (got {})", options_.max_id_attempts));
  }
}

inline std::string Handoff::format_history(const std::vector<HandoffMessage>& history) {
  std::string out;
  for (const auto& m : history) {
    if (!out.empty()) out += "\n\n";
    if (!m.role.empty()) {
      out += m.role;
      out += ": ";
    }
    out += m.content;
  }
  return out;
}

inline RevealResult Handoff::prepare_input(const std::vector<HandoffMessage>& history, RevealPolicy policy) const {
  return cairn::reveal(format_history(history), policy, *store_, tenant_id_, options_.reveal_options);
}

inline RevealResult Handoff::reveal(std::string_view text, RevealPolicy policy) const {
  return cairn::reveal(text, policy, *store_, tenant_id_, options_.reveal_options);
}

inline RevealResult Handoff::expand_references(std::string_view text) const {
  return cairn::expand_references(text, *store_, tenant_id_, options_.reveal_options);
}

inline std::string Handoff::new_id() const {
  return options_.id_prefix + "_" +
         detail::new_token(options_.ids.get(), options_.id_length, detail::handoff::id_alphabet);
}

inline ArtifactPtr Handoff::store_artifact(const ArtifactBlock& block, const std::string& agent) const {
  if (block.content.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw invalid_argument("handoff: an artifact's content must not be blank");
  }
  const std::string_view title_line = detail::handoff::first_line(block.summary.empty() ? block.content : block.summary);
  auto builder = ArtifactRecord::builder();
  builder.tenant_id(tenant_id_)
      .type(ArtifactType::document)
      .title(std::string(detail::handoff::utf8_prefix(title_line, ArtifactRecord::max_title_length)))
      .description(block.summary)
      .value(block.content)
      .size_bytes(block.content.size())
      .created_by(agent)
      .metadata("source", "handoff");
  if (!block.fence_info.empty()) {
    builder.metadata("fence_info", block.fence_info);
    if (const auto mime = detail::handoff::mime_for_fence(block.fence_info); !mime.empty()) {
      builder.mime_type(std::string(mime));
    }
  }
  (void)builder.build();  // validate before taking an id, so a bad agent name costs no store round trip
  // Creating with store_if(absent) checks and takes the id in one atomic step: two handoffs that draw the same id
  // at once cannot both have it; the loser draws again.
  for (int attempt = 0; attempt < options_.max_id_attempts; ++attempt) {
    try {
      return store_->store_if(*builder.id(new_id()).build(), ArtifactStore::absent);
    } catch (const conflict&) {
    }
  }
  throw limit_exceeded(fmt::format(
      "handoff: no free artifact id '{}_' + {} random characters after {} attempts in tenant '{}'; "
      "raise HandoffOptions::id_length",
      options_.id_prefix, options_.id_length, options_.max_id_attempts, detail::excerpt(tenant_id_)));
}

inline HandoffResult Handoff::accept_reply(std::string_view reply, const std::string& agent) const {
  ParsedReply parsed = parse_reply(reply, options_.reply_limits);
  HandoffResult out;
  if (!parsed.is_artifact()) {
    out.text = std::move(parsed.text);
    return out;
  }
  out.artifact = store_artifact(*parsed.artifact, agent);
  out.text = render_reference(out.artifact->id(), parsed.artifact->summary);
  return out;
}

inline HandoffResult Handoff::transfer(const HandoffTarget& target, const std::vector<HandoffMessage>& history) const {
  if (target.name.empty()) throw invalid_argument("handoff: the target needs a name");
  if (!target.agent) {
    throw invalid_argument(fmt::format("handoff: target '{}' has no agent function", detail::excerpt(target.name)));
  }
  RevealResult input = prepare_input(history, target.policy);
  const std::string reply = target.agent(input.text);
  HandoffResult out = accept_reply(reply, target.name);
  out.input = std::move(input.text);
  out.unresolved = std::move(input.unresolved);
  return out;
}

CAIRN_END_NAMESPACE
