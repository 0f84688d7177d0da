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
std::string_view utf8_prefix(std::string_view text, std::size_t max) noexcept;

/// The first non-blank line of `text`, trimmed.
std::string_view first_line(std::string_view text) noexcept;

/// The media type a fence's info string names, or "" when it names none cairn knows.
std::string_view mime_for_fence(std::string_view info) noexcept;

}  // namespace detail::handoff

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/handoff/handoff-inl.hpp"
#endif
