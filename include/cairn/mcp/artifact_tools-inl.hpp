// cairn — the function bodies of cairn/mcp/artifact_tools.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/artifact/search/filter.hpp"
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
    throw invalid_argument(
        fmt::format("{}: {} must be an integer from 1 to {} (got {})", tool, key, max, detail::excerpt(it->dump())));
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
  // translation unit that includes cairn ~40 ms of g++ (docs/performance.md, "Cost of including cairn").
  const nlohmann::json id_schema = {{"type", "string"},
                                    {"minLength", 1},
                                    {"maxLength", ArtifactRecord::max_id_length},
                                    {"description", +"The artifact id."}};
  // Any JSON value, spelled out: a bare {} schema is `true`, which strict clients flag.
  const nlohmann::json any_type = {"string", "number", "boolean", "object", "array", "null"};

  // What the tools return (outputSchema).
  const nlohmann::json text = {{"type", "string"}};
  const nlohmann::json texts = {{"type", "array"}, {"items", text}};
  const nlohmann::json natural = {{"type", "integer"}, {"minimum", 0}};
  const nlohmann::json version_schema = {{"type", "integer"}, {"minimum", 1}};
  const nlohmann::json millis = {{"type", "integer"}, {"description", +"Milliseconds since 1970."}};
  nlohmann::json record_properties = {{"id", text},
                                      {"tenant_id", text},
                                      {"version", version_schema},
                                      {"type", text},
                                      {"title", text},
                                      {"description", text},
                                      {"purpose", text},
                                      {"storage_url", text},
                                      {"mime_type", text},
                                      {"size_bytes", natural},
                                      {"schema_url", text},
                                      {"created_by", text},
                                      {"created_at", millis},
                                      {"metadata", {{"type", "object"}}}};
  const nlohmann::json record_required = {"id",          "tenant_id", "version",    "type",    "title",
                                          "description", "purpose",   "created_at", "metadata"};
  // A list item: the record without its value.
  const nlohmann::json summary_schema = {
      {"type", "object"}, {"properties", record_properties}, {"required", record_required}};
  record_properties["value"] = {{"type", any_type}, {"description", +"The content, when it is stored inline."}};
  const nlohmann::json record_schema = {
      {"type", "object"}, {"properties", record_properties}, {"required", record_required}};
  const nlohmann::json a2a_schema = {{"type", "object"},
                                     {"properties",
                                      {{"artifactId", text},
                                       {"name", text},
                                       {"description", text},
                                       // A v1.0 part holds one of text, data, url or raw; a v0.3.0 part names its kind.
                                       {"parts",
                                        {{"type", "array"},
                                         {"items",
                                          {{"type", "object"},
                                           {"anyOf",
                                            {{{"required", {"text"}}},
                                             {{"required", {"data"}}},
                                             {{"required", {"url"}}},
                                             {{"required", {"raw"}}},
                                             {{"required", {"kind"}}}}}}}}},
                                       {"metadata", {{"type", "object"}}}}},
                                     {"required", {"artifactId", "parts"}}};
  const nlohmann::json cursor_out = {{"type", "string"},
                                     {"description", +"Pass as cursor to get the next page; absent on the last."}};

  tools_.push_back(
      {"artifact_store",
       "Store an artifact (a document, data, code, a file reference, ...) and return its id and version. Give an "
       "existing id to store a new version of it; leave id out to get a new one. The artifact needs a title or a "
       "description, and a value (the content itself) or a storage_url (where the content lives).",
       {{"type", "object"},
        {"properties",
         {{"id",
           {{"type", "string"},
            {"maxLength", ArtifactRecord::max_id_length},
            {"description", +"Id to store under (a new version when it exists); omitted: a new UUID."}}},
          {"type",
           {{"type", "string"},
            {"pattern", +"^[a-z][a-z0-9_-]{0,63}$"},
            {"description", +"Category: document, dataset, code, image, structured, file, data, process, "
                             "config, or another lowercase token."}}},
          {"title", {{"type", "string"}, {"description", +"Short title (at most 500 characters)."}}},
          {"description", {{"type", "string"}, {"description", +"What the artifact is."}}},
          {"purpose", {{"type", "string"}, {"description", +"Why it exists; defaults to the description."}}},
          {"value",
           {{"type", any_type}, {"description", +"The content itself: any JSON value (text, object, array, ...)."}}},
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

  WorkflowTools::describe(
      tools_.back(), "Store an artifact", WorkflowTools::hints(false, false, false),
      {{"type", "object"},
       {"properties",
        {{"id", text}, {"version", version_schema}, {"type", text}, {"title", text}, {"created_at", millis}}},
       {"required", {"id", "version", "type", "title", "created_at"}}});

  tools_.push_back(
      {"artifact_fetch",
       "Fetch an artifact: the latest version, or the version asked for. format \"record\" (default) gives "
       "cairn's record; \"a2a\" gives an A2A v1.0 Artifact (parts and metadata), \"a2a-v0.3\" an A2A v0.3.0 one.",
       {{"type", "object"},
        {"properties",
         {{"id", id_schema},
          {"version",
           {{"type", "integer"}, {"minimum", 1}, {"description", +"Version to fetch; omitted: the latest."}}},
          {"format",
           {{"type", "string"},
            {"enum", {"record", "a2a", "a2a-v0.3"}},
            {"default", "record"},
            {"description", +"record (cairn's JSON form), a2a (an A2A v1.0 Artifact) or a2a-v0.3."}}}}},
        {"required", {"id"}},
        {+"additionalProperties", false}},
       [impl](Args a) {
         return guarded([&] {
           constexpr std::string_view tool = "artifact_fetch";
           check_args(tool, a, {"id", "version", "format"});
           const auto id = required_string(tool, a, "id");
           const auto version = opt_positive(tool, a, "version", UINT64_MAX);
           const auto format = opt_string(tool, a, "format").value_or("record");
           if (format != "record" && format != "a2a" && format != "a2a-v0.3") {
             throw invalid_argument(
                 fmt::format("artifact_fetch: format must be \"record\", \"a2a\" or \"a2a-v0.3\" (got \"{}\")",
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
           if (format == "record") return nlohmann::json(*r);
           return to_a2a(*r, format == "a2a" ? A2AVersion::v1_0 : A2AVersion::v0_3);
         });
       }});

  WorkflowTools::describe(
      tools_.back(), "Fetch an artifact", WorkflowTools::hints(true, false, true),
      {{"type", "object"},
       {"description", +"A cairn record (format record) or an A2A Artifact (a2a: v1.0; a2a-v0.3: v0.3.0)."},
       {"anyOf", {record_schema, a2a_schema}}});

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
          {"limit",
           {{"type", "integer"},
            {"minimum", 1},
            {"maximum", ListQuery::max_limit},
            {"default", 100},
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

  WorkflowTools::describe(
      tools_.back(), "List artifacts", WorkflowTools::hints(true, false, true),
      {{"type", "object"},
       {"properties", {{"artifacts", {{"type", "array"}, {"items", summary_schema}}}, {"next_cursor", cursor_out}}},
       {"required", {"artifacts"}}});

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

  WorkflowTools::describe(tools_.back(), "Versions of an artifact", WorkflowTools::hints(true, false, true),
                          {{"type", "object"},
                           {"properties", {{"id", text}, {"versions", {{"type", "array"}, {"items", version_schema}}}}},
                           {"required", {"id", "versions"}}});

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

  WorkflowTools::describe(tools_.back(), "Delete an artifact", WorkflowTools::hints(false, true, true),
                          {{"type", "object"},
                           {"properties", {{"deleted", text}, {+"versions_removed", natural}}},
                           {"required", {"deleted", "versions_removed"}}});

  tools_.push_back(
      {"search_artifacts",
       "Find artifacts by words (all of them; \"a phrase\", -excluded, a OR b) and, when the server has an "
       "embedder, by meaning; narrowed by filter. Hits come best first with their score and what matched; when "
       "next_cursor is in the result, pass it as cursor (with the same query) to get the next page.",
       {{"type", "object"},
        {"properties",
         {{"query",
           {{"type", "string"},
            {"maxLength", SearchQuery::max_text_bytes},
            {"description", +"Words to find; omitted: the filter alone (in id order)."}}},
          {"filter",
           {{"type", "object"},
            {"properties",
             {{"type", {{"type", "string"}, {"description", +"Only artifacts of this type."}}},
              {"mime_type", {{"type", "string"}, {"description", +"Only this mime type."}}},
              {"created_by", {{"type", "string"}, {"description", +"Only artifacts made by this agent."}}},
              {"id_prefix", {{"type", "string"}, {"description", +"Only ids starting with this."}}},
              {"created_after", {{"type", "integer"}, {"description", +"Created at or after (ms since 1970)."}}},
              {"created_before", {{"type", "integer"}, {"description", +"Created before (ms since 1970)."}}},
              {"metadata",
               {{"type", "array"},
                {"maxItems", SearchQuery::max_conditions},
                {"description", +"Conditions on metadata fields, all of which must hold."},
                {"items",
                 {{"type", "object"},
                  {"properties",
                   {{"pointer", {{"type", "string"}, {"description", +"JSON pointer to the field: /region"}}},
                    {"op", {{"type", "string"}, {"enum", {"eq", "ne", "lt", "le", "gt", "ge", "in", "exists"}}}},
                    {"value", {{"type", any_type}, {"description", +"What to compare with (an array for in)."}}}}},
                  {"required", {"pointer", "op"}},
                  {+"additionalProperties", false}}}}}}},
            {+"additionalProperties", false}}},
          {"limit",
           {{"type", "integer"},
            {"minimum", 1},
            {"maximum", SearchQuery::max_limit},
            {"default", 10},
            {"description", "Hits per page."}}},
          {"cursor", {{"type", "string"}, {"description", +"next_cursor of the previous page."}}},
          {"mode",
           {{"type", "string"},
            {"enum", {"automatic", "text", "similarity", "hybrid"}},
            {"default", "automatic"},
            {"description", +"automatic (words, and meaning when the server has an embedder), text "
                             "(words only), similarity (meaning only) or hybrid (both)."}}}}},
        {+"additionalProperties", false}},
       [impl](Args a) {
         return guarded([&] {
           constexpr std::string_view tool = "search_artifacts";
           check_args(tool, a, {"query", "filter", "limit", "cursor", "mode"});
           SearchQuery q;
           q.text = opt_string(tool, a, "query").value_or("");
           if (auto limit = opt_positive(tool, a, "limit", SearchQuery::max_limit)) q.limit = *limit;
           q.cursor = opt_string(tool, a, "cursor").value_or("");
           if (const auto mode = opt_string(tool, a, "mode")) {
             if (*mode == "automatic") {
               q.mode = SearchMode::automatic;
             } else if (*mode == "text") {
               q.mode = SearchMode::text;
             } else if (*mode == "similarity") {
               q.mode = SearchMode::similarity;
             } else if (*mode == "hybrid") {
               q.mode = SearchMode::hybrid;
             } else {
               throw invalid_argument(fmt::format(
                   "search_artifacts: mode must be \"automatic\", \"text\", \"similarity\" or \"hybrid\" (got \"{}\")",
                   detail::excerpt(*mode)));
             }
           }
           if (!a.is_null() && a.contains("filter") && !a["filter"].is_null()) q.filter = search_filter(a.at("filter"));
           SearchPage page;
           try {
             page = impl->store->search(impl->tenant, q);
           } catch (const invalid_argument& e) {
             throw invalid_argument(fmt::format("search_artifacts: {}", e.what()));
           } catch (const limit_exceeded& e) {
             throw limit_exceeded(fmt::format("search_artifacts: {}", e.what()));
           }
           nlohmann::json hits = nlohmann::json::array();
           for (const auto& h : page.hits) {
             nlohmann::json matched = {{"words", h.matched.words}, {"fields", h.matched.fields}};
             if (h.matched.similarity) matched["similarity"] = *h.matched.similarity;
             if (h.matched.text_rank) matched["text_rank"] = h.matched.text_rank;
             if (h.matched.vector_rank) matched["vector_rank"] = h.matched.vector_rank;
             hits.push_back({{"id", h.record->id()},
                             {"version", h.record->version()},
                             {"title", h.record->title()},
                             {"type", h.record->type().str()},
                             {"score", h.score},
                             {"matched", std::move(matched)}});
           }
           nlohmann::json out = {{"hits", std::move(hits)}};
           if (page.next_cursor) out["next_cursor"] = *page.next_cursor;
           return out;
         });
       }});

  const nlohmann::json hit_schema = {{"type", "object"},
                                     {"properties",
                                      {{"id", text},
                                       {"version", version_schema},
                                       {"title", text},
                                       {"type", text},
                                       {"score", {{"type", "number"}}},
                                       {"matched",
                                        {{"type", "object"},
                                         {"properties",
                                          {{"words", texts},
                                           {"fields", texts},
                                           {"similarity", {{"type", "number"}}},
                                           {"text_rank", natural},
                                           {"vector_rank", natural}}},
                                         {"required", {"words", "fields"}}}}}},
                                     {"required", {"id", "version", "title", "type", "score", "matched"}}};
  WorkflowTools::describe(
      tools_.back(), "Search artifacts", WorkflowTools::hints(true, false, true),
      {{"type", "object"},
       {"properties", {{"hits", {{"type", "array"}, {"items", hit_schema}}}, {"next_cursor", cursor_out}}},
       {"required", {"hits"}}});
}

CAIRN_INLINE SearchFilter ArtifactTools::search_filter(Args f) {
  constexpr std::string_view where = "search_artifacts: filter";
  if (!f.is_object()) throw invalid_argument(fmt::format("{} must be an object (got {})", where, f.type_name()));
  check_args(where, f, {"type", "mime_type", "created_by", "id_prefix", "created_after", "created_before", "metadata"});
  const auto str = [&f](const char* key) -> std::optional<std::string> {
    const auto it = f.find(key);
    if (it == f.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) {
      throw invalid_argument(
          fmt::format("search_artifacts: filter.{} must be a string (got {})", key, it->type_name()));
    }
    return it->get<std::string>();
  };
  const auto millis = [&f](const char* key) -> std::optional<std::int64_t> {
    const auto it = f.find(key);
    if (it == f.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<std::uint64_t>() > INT64_MAX)) {
      throw invalid_argument(
          fmt::format("search_artifacts: filter.{} must be an integer (milliseconds since 1970; got {})", key,
                      detail::excerpt(it->dump())));
    }
    return it->get<std::int64_t>();
  };
  SearchFilter out;
  if (auto t = str("type")) {
    if (!ArtifactType::is_valid(*t)) {
      throw invalid_argument(
          fmt::format("search_artifacts: filter.type: '{}' is not an artifact type (a lowercase token matching "
                      "[a-z][a-z0-9_-]{{0,63}})",
                      detail::excerpt(*t)));
    }
    out.type = ArtifactType(std::move(*t));
  }
  out.mime_type = str("mime_type");
  out.created_by = str("created_by");
  out.id_prefix = str("id_prefix").value_or("");
  out.created_after = millis("created_after");
  out.created_before = millis("created_before");
  const auto m = f.find("metadata");
  if (m == f.end() || m->is_null()) return out;
  if (!m->is_array()) {
    throw invalid_argument(fmt::format("search_artifacts: filter.metadata must be an array (got {})", m->type_name()));
  }
  if (m->size() > SearchQuery::max_conditions) {
    throw limit_exceeded(fmt::format("search_artifacts: filter.metadata has {} conditions, more than the limit of {}",
                                     m->size(), SearchQuery::max_conditions));
  }
  for (std::size_t i = 0; i < m->size(); ++i) {
    const auto& c = (*m)[i];
    const std::string at = fmt::format("search_artifacts: filter.metadata[{}]", i);
    if (!c.is_object()) throw invalid_argument(fmt::format("{} must be an object (got {})", at, c.type_name()));
    check_args(at, c, {"pointer", "op", "value"});
    FieldCondition cond;
    const auto p = c.find("pointer");
    if (p == c.end() || !p->is_string()) throw invalid_argument(at + ".pointer is required (a string)");
    cond.pointer = p->get<std::string>();
    const auto op = c.find("op");
    if (op == c.end() || !op->is_string()) throw invalid_argument(at + ".op is required (a string)");
    static constexpr FieldOp ops[] = {FieldOp::eq, FieldOp::ne, FieldOp::lt, FieldOp::le,
                                      FieldOp::gt, FieldOp::ge, FieldOp::in, FieldOp::exists};
    bool known = false;
    for (const FieldOp o : ops) {
      if (detail::field_op_name(o) == op->get_ref<const std::string&>()) {
        cond.op = o;
        known = true;
      }
    }
    if (!known) {
      throw invalid_argument(fmt::format("{}.op must be one of eq, ne, lt, le, gt, ge, in, exists (got \"{}\")", at,
                                         detail::excerpt(op->get<std::string>())));
    }
    if (const auto v = c.find("value"); v != c.end()) {
      cond.value = *v;
    } else if (cond.op != FieldOp::exists) {
      throw invalid_argument(fmt::format("{}.value is required for {}", at, op->get<std::string>()));
    }
    out.metadata.push_back(std::move(cond));
  }
  return out;
}

}  // namespace mcp

CAIRN_END_NAMESPACE
