// cairn — the function bodies of cairn/mcp/artifact_tools.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/mcp/artifact_tools.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace mcp {
CAIRN_INLINE ArtifactTools::ArtifactTools(std::shared_ptr<ArtifactStore> store, std::string tenant_id) {
  if (!store) throw invalid_argument("ArtifactTools: store must not be null");
  detail::check_tenant(tenant_id);
  build(std::make_shared<const Impl>(Impl{std::move(store), std::move(tenant_id)}));
}

CAIRN_INLINE nlohmann::json ArtifactTools::call(std::string_view name, const nlohmann::json& arguments) const {
  for (const auto& t : tools_) {
    if (t.name == name) return t.handler(arguments);
  }
  return WorkflowTools::error_result(fmt::format("unknown tool '{}'", detail::excerpt(name)));
}

CAIRN_INLINE void ArtifactTools::check_args(std::string_view tool, Args a,
                                            std::initializer_list<std::string_view> known) {
  if (!a.is_object() && !a.is_null()) {
    throw invalid_argument(fmt::format("{}: arguments must be a JSON object", tool));
  }
  for (const auto& item : a.items()) {
    if (item.key() == "tenant_id") {
      throw invalid_argument(fmt::format(
          "{}: tenant_id is not an argument: the tenant is fixed by the server (cairn-mcp --tenant)", tool));
    }
    bool ok = false;
    for (auto k : known) ok = ok || item.key() == k;
    if (!ok) throw invalid_argument(fmt::format("{}: unknown argument '{}'", tool, detail::excerpt(item.key())));
  }
}

CAIRN_INLINE std::optional<std::string> ArtifactTools::opt_string(std::string_view tool, Args a, const char* key) {
  if (a.is_null()) return std::nullopt;
  const auto it = a.find(key);
  if (it == a.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw invalid_argument(fmt::format("{}: {} must be a string", tool, key));
  return it->get<std::string>();
}

CAIRN_INLINE std::string ArtifactTools::required_string(std::string_view tool, Args a, const char* key) {
  auto v = opt_string(tool, a, key);
  if (!v || v->empty()) throw invalid_argument(fmt::format("{}: {} is required (a non-empty string)", tool, key));
  return *v;
}

CAIRN_INLINE std::optional<std::uint64_t> ArtifactTools::opt_positive(std::string_view tool, Args a, const char* key,
                                                                      std::uint64_t max) {
  if (a.is_null()) return std::nullopt;
  const auto it = a.find(key);
  if (it == a.end() || it->is_null()) return std::nullopt;
  // 3.0 is accepted as 3 (JSON has one number type); 2.5, "3", 0 and negatives are not.
  std::optional<std::uint64_t> v;
  if (it->is_number_unsigned()) {
    v = it->get<std::uint64_t>();
  } else if (it->is_number_integer() && it->get<std::int64_t>() > 0) {
    v = static_cast<std::uint64_t>(it->get<std::int64_t>());
  } else if (it->is_number_float()) {
    // Below 2^64 only: converting a larger double to an integer is undefined behaviour.
    const double d = it->get<double>();
    if (d >= 1 && d < 18446744073709551616.0 && std::floor(d) == d) v = static_cast<std::uint64_t>(d);
  }
  if (!v || *v == 0 || *v > max) {
    throw invalid_argument(fmt::format("{}: {} must be an integer from 1 to {} (got {})", tool, key, max,
                                       detail::excerpt(it->dump())));
  }
  return v;
}

CAIRN_INLINE nlohmann::json ArtifactTools::guarded(const std::function<nlohmann::json()>& body) {
  try {
    return WorkflowTools::ok_result(body());
  } catch (const std::exception& e) {
    return WorkflowTools::error_result(e.what());
  }
}

CAIRN_INLINE nlohmann::json ArtifactTools::summary(const ArtifactRecord& r) {
  nlohmann::json j = r;
  j.erase("value");
  return j;
}

CAIRN_INLINE void ArtifactTools::build(const ImplPtr& impl) {
  // Long string literals in these JSON initializer lists are written +"..." so that they decay to const char*:
  // nlohmann instantiates its constructors once per char-array length, and every distinct length costs each
  // translation unit that includes cairn ~40 ms of g++ (docs/performance.md, "Include cost").
  const nlohmann::json id_schema = {{"type", "string"},
                                    {"minLength", 1},
                                    {"maxLength", ArtifactRecord::max_id_length},
                                    {"description", +"The artifact id."}};

  tools_.push_back(
      {"artifact_store",
       "Store an artifact (a document, data, code, a file reference, ...) and return its id and version. Give an "
       "existing id to store a new version of it; leave id out to get a new one. The artifact needs a title or a "
       "description, and a value (the content itself) or a storage_url (where the content lives).",
       {{"type", "object"},
        {"properties",
         {{"id", {{"type", "string"}, {"maxLength", ArtifactRecord::max_id_length},
                  {"description", +"Id to store under (a new version when it exists); omitted: a new UUID."}}},
          {"type", {{"type", "string"}, {"pattern", +"^[a-z][a-z0-9_-]{0,63}$"},
                    {"description", +"Category: document, dataset, code, image, structured, file, data, process, "
                                    "config, or another lowercase token."}}},
          {"title", {{"type", "string"}, {"description", +"Short title (at most 500 characters)."}}},
          {"description", {{"type", "string"}, {"description", +"What the artifact is."}}},
          {"purpose", {{"type", "string"}, {"description", +"Why it exists; defaults to the description."}}},
          {"value", {{"description", +"The content itself: any JSON value (text, object, array, ...)."}}},
          {"storage_url", {{"type", "string"}, {"description", +"Where large content lives (a URL or path)."}}},
          {"mime_type", {{"type", "string"}, {"description", +"type/subtype of the content."}}},
          {"size_bytes", {{"type", "integer"}, {"minimum", 0}, {"description", +"Size of the content."}}},
          {"schema_url", {{"type", "string"}, {"description", +"JSON Schema the value follows."}}},
          {"created_by", {{"type", "string"}, {"description", +"Id of the agent that made it."}}},
          {"metadata", {{"type", "object"}, {"description", +"Anything else, as a JSON object."}}}}},
        {"required", {"type"}},
        {+"additionalProperties", false}},
       [impl](Args a) {
         return guarded([&] {
           constexpr std::string_view tool = "artifact_store";
           check_args(tool, a,
                      {"id", "type", "title", "description", "purpose", "value", "storage_url", "mime_type",
                       "size_bytes", "schema_url", "created_by", "metadata"});
           if (a.is_null() || !a.contains("type")) throw invalid_argument("artifact_store: type is required");
           // The record's own validation names the field that is wrong; the tenant comes from the server only.
           nlohmann::json record = a;
           record["tenant_id"] = impl->tenant;
           ArtifactPtr stored;
           try {
             stored = impl->store->store(*ArtifactRecord::from_json(record));
           } catch (const invalid_artifact& e) {
             throw invalid_argument(fmt::format("artifact_store: {}", e.what()));
           }
           return nlohmann::json{{"id", stored->id()},
                                 {"version", stored->version()},
                                 {"type", stored->type().str()},
                                 {"title", stored->title()},
                                 {"created_at", stored->created_at()}};
         });
       }});

  tools_.push_back(
      {"artifact_fetch",
       "Fetch an artifact: the latest version, or the version asked for. format \"record\" (default) gives "
       "cairn's record; \"a2a\" gives an A2A v0.3.0 Artifact (parts and metadata).",
       {{"type", "object"},
        {"properties",
         {{"id", id_schema},
          {"version", {{"type", "integer"}, {"minimum", 1},
                       {"description", +"Version to fetch; omitted: the latest."}}},
          {"format", {{"type", "string"}, {"enum", {"record", "a2a"}}, {"default", "record"},
                      {"description", +"record (cairn's JSON form) or a2a (an A2A Artifact)."}}}}},
        {"required", {"id"}},
        {+"additionalProperties", false}},
       [impl](Args a) {
         return guarded([&] {
           constexpr std::string_view tool = "artifact_fetch";
           check_args(tool, a, {"id", "version", "format"});
           const auto id = required_string(tool, a, "id");
           const auto version = opt_positive(tool, a, "version", UINT64_MAX);
           const auto format = opt_string(tool, a, "format").value_or("record");
           if (format != "record" && format != "a2a") {
             throw invalid_argument(fmt::format("artifact_fetch: format must be \"record\" or \"a2a\" (got \"{}\")",
                                                detail::excerpt(format)));
           }
           const auto r = impl->store->fetch(id, impl->tenant, version.value_or(ArtifactStore::latest));
           if (!r) {
             if (version) {
               throw not_found(fmt::format("artifact '{}' version {} not found in tenant '{}'",
                                           detail::excerpt(id, 300), *version, detail::excerpt(impl->tenant, 300)));
             }
             throw not_found(detail::artifact_missing_message(id, impl->tenant));
           }
           return format == "a2a" ? to_a2a(*r) : nlohmann::json(*r);
         });
       }});

  tools_.push_back(
      {"artifact_list",
       "List artifacts (latest versions, without their values) in id order, a page at a time, optionally only "
       "those whose id starts with prefix, of a type, or made by an agent. When next_cursor is in the result, "
       "pass it as cursor to get the next page.",
       {{"type", "object"},
        {"properties",
         {{"prefix", {{"type", "string"}, {"description", +"Only ids starting with this."}}},
          {"type", {{"type", "string"}, {"description", +"Only artifacts of this type."}}},
          {"created_by", {{"type", "string"}, {"description", +"Only artifacts made by this agent."}}},
          {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", ListQuery::max_limit}, {"default", 100},
                     {"description", "Page size."}}},
          {"cursor", {{"type", "string"}, {"description", +"next_cursor of the previous page."}}}}},
        {+"additionalProperties", false}},
       [impl](Args a) {
         return guarded([&] {
           constexpr std::string_view tool = "artifact_list";
           check_args(tool, a, {"prefix", "type", "created_by", "limit", "cursor"});
           ListQuery q;
           q.prefix = opt_string(tool, a, "prefix").value_or("");
           if (auto t = opt_string(tool, a, "type")) {
             try {
               q.type = ArtifactType(std::move(*t));
             } catch (const error& e) {
               throw invalid_argument(fmt::format("artifact_list: {}", e.what()));
             }
           }
           q.created_by = opt_string(tool, a, "created_by");
           if (auto limit = opt_positive(tool, a, "limit", ListQuery::max_limit)) q.limit = *limit;
           q.cursor = opt_string(tool, a, "cursor").value_or("");
           const auto page = impl->store->list(impl->tenant, q);
           nlohmann::json items = nlohmann::json::array();
           for (const auto& r : page.items) items.push_back(summary(*r));
           nlohmann::json out = {{"artifacts", std::move(items)}};
           if (page.next_cursor) out["next_cursor"] = *page.next_cursor;
           return out;
         });
       }});

  tools_.push_back({"artifact_versions",
                    "The version numbers of an artifact, oldest first.",
                    {{"type", "object"},
                     {"properties", {{"id", id_schema}}},
                     {"required", {"id"}},
                     {+"additionalProperties", false}},
                    [impl](Args a) {
                      return guarded([&] {
                        constexpr std::string_view tool = "artifact_versions";
                        check_args(tool, a, {"id"});
                        const auto id = required_string(tool, a, "id");
                        auto versions = impl->store->versions(id, impl->tenant);
                        if (versions.empty()) throw not_found(detail::artifact_missing_message(id, impl->tenant));
                        return nlohmann::json{{"id", id}, {"versions", versions}};
                      });
                    }});

  tools_.push_back({"artifact_delete",
                    "Delete an artifact with all its versions.",
                    {{"type", "object"},
                     {"properties", {{"id", id_schema}}},
                     {"required", {"id"}},
                     {+"additionalProperties", false}},
                    [impl](Args a) {
                      return guarded([&] {
                        constexpr std::string_view tool = "artifact_delete";
                        check_args(tool, a, {"id"});
                        const auto id = required_string(tool, a, "id");
                        const auto count = impl->store->versions(id, impl->tenant).size();
                        impl->store->remove(id, impl->tenant);  // not_found: same text as a missing id
                        return nlohmann::json{{"deleted", id}, {+"versions_removed", count}};
                      });
                    }});
}

}

CAIRN_END_NAMESPACE
