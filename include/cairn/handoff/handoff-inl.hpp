// cairn — the function bodies of cairn/handoff/handoff.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/handoff/handoff.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail::handoff {
CAIRN_INLINE std::string_view utf8_prefix(std::string_view text, std::size_t max) noexcept {
  std::size_t points = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      if (points == max) return text.substr(0, i);
      ++points;
    }
  }
  return text;
}

CAIRN_INLINE std::string_view first_line(std::string_view text) noexcept {
  LineCursor c(text);
  while (!c.done()) {
    const std::string_view l = trim_blanks(c.next());
    if (!l.empty()) return l;
  }
  return {};
}

CAIRN_INLINE std::string_view mime_for_fence(std::string_view info) noexcept {
  struct Entry {
    std::string_view info, mime;
  };
  static constexpr Entry table[] = {
      {"markdown", "text/markdown"},
      {"md", "text/markdown"},
      {"json", "application/json"},
      {"html", "text/html"},
      {"csv", "text/csv"},
      {"text", "text/plain"},
      {"txt", "text/plain"},
      {"plain", "text/plain"},
      {"yaml", "application/yaml"},
      {"yml", "application/yaml"},
      {"xml", "application/xml"},
      {"python", "text/x-python"},
      {"py", "text/x-python"},
      {"cpp", "text/x-c++src"},
      {"c++", "text/x-c++src"},
      {"sql", "application/sql"},
      {"javascript", "text/javascript"},
      {"js", "text/javascript"},
  };
  for (const auto& e : table) {
    if (e.info.size() == info.size() && starts_with_nocase(info, e.info)) return e.mime;
  }
  return {};
}

}  // namespace detail::handoff

CAIRN_INLINE Handoff::Handoff(std::shared_ptr<ArtifactStore> store, std::string tenant_id, HandoffOptions options)
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
    throw invalid_argument(fmt::format("HandoffOptions::id_prefix: '{}' must match [A-Za-z0-9][A-Za-z0-9_-]{{0,63}}",
                                       detail::excerpt(prefix)));
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

CAIRN_INLINE std::string Handoff::format_history(const std::vector<HandoffMessage>& history) {
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

CAIRN_INLINE RevealResult Handoff::prepare_input(const std::vector<HandoffMessage>& history,
                                                 RevealPolicy policy) const {
  return cairn::reveal(format_history(history), policy, *store_, tenant_id_, options_.reveal_options);
}

CAIRN_INLINE RevealResult Handoff::reveal(std::string_view text, RevealPolicy policy) const {
  return cairn::reveal(text, policy, *store_, tenant_id_, options_.reveal_options);
}

CAIRN_INLINE RevealResult Handoff::expand_references(std::string_view text) const {
  return cairn::expand_references(text, *store_, tenant_id_, options_.reveal_options);
}

CAIRN_INLINE std::string Handoff::new_id() const {
  return options_.id_prefix + "_" +
         detail::new_token(options_.ids.get(), options_.id_length, detail::handoff::id_alphabet);
}

CAIRN_INLINE ArtifactPtr Handoff::store_artifact(const ArtifactBlock& block, const std::string& agent) const {
  if (block.content.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw invalid_argument("handoff: an artifact's content must not be blank");
  }
  const std::string_view title_line =
      detail::handoff::first_line(block.summary.empty() ? block.content : block.summary);
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
  throw limit_exceeded(
      fmt::format("handoff: no free artifact id '{}_' + {} random characters after {} attempts in tenant '{}'; "
                  "raise HandoffOptions::id_length",
                  options_.id_prefix, options_.id_length, options_.max_id_attempts, detail::excerpt(tenant_id_)));
}

CAIRN_INLINE HandoffResult Handoff::accept_reply(std::string_view reply, const std::string& agent) const {
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

CAIRN_INLINE HandoffResult Handoff::transfer(const HandoffTarget& target,
                                             const std::vector<HandoffMessage>& history) const {
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
