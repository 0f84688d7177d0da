// PostgresArtifactStore: search (by words through the GIN index, by similarity through this process's vector index
// caught up from cairn_search_changes, hybrid, exact) and reindex.
#include "cairn/store/postgres_store.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "postgres_store_impl.hpp"

CAIRN_BEGIN_NAMESPACE
namespace {

/// The conditions of a search filter that SQL checks (the id prefix as a range, type, creation time; MIME type and
/// creator are passed as they are), as statement parameters; nothing when no stored row can match.
struct SqlFilter {
  PrefixRange range;
  std::optional<std::string> type, after, before;
};

std::optional<SqlFilter> sql_filter(const std::string& tenant_id, const SearchFilter& f) {
  auto range = f.id_prefix.find('\0') == std::string::npos ? prefix_range(f.id_prefix) : std::nullopt;
  if (!fits_pg_text(tenant_id) || !range || (f.mime_type && !fits_pg_text(*f.mime_type)) ||
      (f.created_by && !fits_pg_text(*f.created_by))) {
    return std::nullopt;
  }
  const auto int_text = [](const std::optional<std::int64_t>& v) {
    return v ? std::optional<std::string>(std::to_string(*v)) : std::nullopt;
  };
  return SqlFilter{std::move(*range), f.type ? std::optional<std::string>(f.type->str()) : std::nullopt,
                   int_text(f.created_after), int_text(f.created_before)};
}

/// The tsquery that finds a superset of what `q` matches: every group (any of its terms; a phrase as all of its
/// words), and none of the excluded single words. Phrases and excluded phrases are checked in cairn afterwards,
/// on the record's own words (so tsvector positions, which PostgreSQL caps, are not needed).
std::string word_tsquery(const detail::WordQuery& q, const std::string& tenant_prefix) {
  const auto term = [&](const detail::QueryTerm& t) {
    std::string out;
    for (const auto& w : t.words) out += (out.empty() ? "" : " & ") + quoted(tenant_prefix + lexeme(w));
    return t.words.size() > 1 ? "(" + out + ")" : out;
  };
  std::string out;
  for (const auto& group : q.all_of) {
    std::string any;
    for (const auto& t : group) any += (any.empty() ? "" : " | ") + term(t);
    out += (out.empty() ? "" : " & ") + (group.size() > 1 ? "(" + any + ")" : any);
  }
  for (const auto& t : q.none_of) {
    if (t.words.size() == 1 && lexeme(t.words[0]) == t.words[0]) out += " & !" + quoted(tenant_prefix + t.words[0]);
  }
  return out;
}

/// A tsquery[] literal of one single-word tsquery per word (to count their documents in a small tenant).
std::string word_tsquery_array(const std::vector<std::string>& words, const std::string& tenant_prefix) {
  std::vector<std::string> queries;
  for (const auto& w : words) queries.push_back(quoted(tenant_prefix + lexeme(w)));
  return array_literal(queries);
}

/// A text[] literal of the tenant's lexeme of each word (whose kept document counts the search reads).
std::string lexeme_array(const std::vector<std::string>& words, const std::string& tenant_prefix) {
  std::vector<std::string> lexemes;
  for (const auto& w : words) lexemes.push_back(tenant_prefix + lexeme(w));
  return array_literal(lexemes);
}

}  // namespace

SearchPage PostgresArtifactStore::search(const std::string& tenant_id, const SearchQuery& q) const {
  // The default search's checks, choices and errors (detail::prepare_search); filters alone are its scan of list()
  // pages.
  const detail::PreparedSearch p = detail::prepare_search(*this, tenant_id, q);
  if (!p.by_text && !p.by_vector) return detail::default_search(*this, tenant_id, q, p);
  // Similarity alone: this process's vector index (exact unless the query sets ef).
  if (p.by_vector && !p.by_text) {
    SearchPage page;
    (void)impl_->similar_candidates(tenant_id, q, p, 0, &page);
    return page;
  }
  // Otherwise every version the words match (the GIN index's candidates with their BM25 scores), by key, and the
  // vectors: for hybrid the 4 x limit nearest that pass the filters through the approximate index (as the other
  // stores; the cursor applies to the fused ranking), for exact similarity every vector of the tenant's scope; ranked
  // as the default scan ranks, with the records of the page alone made from their rows (detail::rank_keyed_page).
  std::size_t unindexed = 0;
  Impl::WordRows words = impl_->word_candidates(tenant_id, q, p.words, &unindexed);
  std::vector<detail::KeyedCandidate>& found = words.found;
  if (p.by_vector) {
    std::vector<detail::SearchCandidate> near = q.exact
                                                    ? impl_->exact_candidates(tenant_id, q, *p.vector)
                                                    : impl_->similar_candidates(tenant_id, q, p, 4 * q.limit, nullptr);
    detail::add_similar(found, std::move(near));
  }
  SearchPage page = detail::rank_keyed_page(std::move(found), q, p, [&](const std::string& id, std::uint64_t v) {
    return impl_->word_record(words.res.get(), id, v);
  });
  page.unindexed = unindexed;
  return page;
}

namespace {

/// The text of a value stored as a plain JSON string (no escapes, no control characters, valid UTF-8, within
/// `limits`), as detail::value_text reads the record's value; nothing for any other value, whose record is made to
/// read it.
std::optional<std::string_view> plain_string_text(std::string_view json, const JsonLimits& limits) {
  if (json.size() < 2 || json.size() > limits.max_bytes || json.front() != '"' || json.back() != '"') {
    return std::nullopt;
  }
  const std::string_view s = json.substr(1, json.size() - 2);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\' || c < 0x20) return std::nullopt;
  }
  if (!detail::is_valid_utf8(s)) return std::nullopt;
  const std::string_view cut = s.substr(0, detail::max_value_text_bytes);
  return cut.substr(0, detail::valid_utf8_prefix_length(cut));
}

/// How often each of a word query's words occurs in a version's title, description and value, and how many words
/// they hold: what BM25, the query's match and SearchMatch read of detail::record_words, for a query of single
/// words (the words of its groups, then those it excludes).
struct ColumnWords {
  std::vector<std::array<std::size_t, 3>> n;
  std::size_t length = 0;
  std::size_t total(std::size_t i) const noexcept { return n[i][0] + n[i][1] + n[i][2]; }
};

ColumnWords count_words(const std::array<std::string_view, 3>& fields, const std::vector<std::string>& counted) {
  ColumnWords out;
  out.n.assign(counted.size(), {0, 0, 0});
  for (std::size_t f = 0; f < fields.size(); ++f) {
    detail::for_each_word(fields[f], [&](const std::string& w) {
      ++out.length;
      for (std::size_t i = 0; i < counted.size(); ++i) {
        if (w == counted[i]) ++out.n[i][f];
      }
    });
  }
  return out;
}

}  // namespace

PostgresArtifactStore::Impl::WordRows PostgresArtifactStore::Impl::word_candidates(const std::string& tenant_id,
                                                                                   const SearchQuery& q,
                                                                                   const detail::WordQuery& words,
                                                                                   std::size_t* unindexed) {
  WordRows out;
  const auto& f = q.filter;
  const auto sql = sql_filter(tenant_id, f);
  if (!sql) return out;  // nothing stored can match
  const std::vector<std::string> query_words = words.words();
  // The words' document counts this process has for the tenant, and the statistics state they hold for.
  const auto counts_key = std::make_pair(tenant_id, q.all_versions);
  std::optional<std::string> stats;
  std::vector<std::string> known;
  {
    std::lock_guard lock(word_counts_mutex);
    const auto it = word_counts.find(counts_key);
    const WordCounts* kept = it == word_counts.end() ? nullptr : &it->second;
    if (kept) stats = kept->stats;
    for (const auto& w : query_words) {
      std::string count = "-1";  // not known: the server counts it
      if (kept) {
        if (const auto df = kept->df.find(w); df != kept->df.end()) count = std::to_string(df->second);
      }
      known.push_back(std::move(count));
    }
  }
  const std::string known_text = array_literal(known);
  out.res = with_connection([&](Impl::Connection& c, bool) -> Result {
    const std::optional<std::string> prefix = lexeme_prefix(c, tenant_id);
    if (!prefix) return Result(nullptr, &PQclear);  // the tenant never wrote: no words, nothing unindexed
    const std::string df_queries = word_tsquery_array(query_words, *prefix);
    const std::string lexemes = lexeme_array(query_words, *prefix);
    const std::string match = word_tsquery(words, *prefix);
    Impl::Params p;
    p.add(tenant_id).add(sql->range.lower).add(sql->range.upper).add(df_queries).add(match).add(sql->type);
    p.add(f.mime_type).add(f.created_by).add(sql->after).add(sql->before).add(known_text).add(stats).add(lexemes);
    return run(c, q.all_versions ? search_all : search_latest, p);
  });
  const PGresult* res = out.res.get();
  if (!res) {
    if (unindexed) *unindexed = 0;
    return out;
  }

  // The statistics (the same on every row), then the candidates, scored in cairn exactly as the default scan does.
  constexpr int stats_column = 15;
  const auto number = [&](int col) { return static_cast<std::size_t>(to_int64(PQgetvalue(res, 0, col))); };
  const std::size_t documents = number(stats_column), total_length = number(stats_column + 1);
  if (unindexed) *unindexed = number(stats_column + 2);
  std::vector<std::size_t> df;
  const std::string_view df_text = PQgetvalue(res, 0, stats_column + 3);  // "{3,1}"
  for (std::size_t i = 1; i < df_text.size();) {
    const std::size_t end = std::min(df_text.find_first_of(",}", i), df_text.size());
    df.push_back(static_cast<std::size_t>(to_int64(df_text.substr(i, end - i))));
    i = end + 1;
  }
  if (df.size() == query_words.size() && !PQgetisnull(res, 0, stats_column + 4)) {
    std::lock_guard lock(word_counts_mutex);
    WordCounts& kept = word_counts[counts_key];
    const char* now = PQgetvalue(res, 0, stats_column + 4);
    if (kept.stats != now) {
      word_counts_kept -= kept.df.size();
      kept.df.clear();
      kept.stats = now;
    }
    if (word_counts_kept + query_words.size() > max_word_counts) {
      word_counts.clear();
      word_counts_kept = 0;
    } else {
      for (std::size_t i = 0; i < df.size(); ++i) {
        if (kept.df.emplace(query_words[i], static_cast<std::int64_t>(df[i])).second) ++word_counts_kept;
      }
    }
  }
  const detail::Bm25 bm25(query_words, documents, total_length, std::move(df));

  // A query of single words and no metadata condition is decided and scored from the text columns; its records are
  // made for the page alone (word_record). Otherwise each candidate's record is made to decide it.
  const auto single = [](const detail::QueryTerm& t) { return t.words.size() == 1; };
  bool from_columns = f.metadata.empty() && std::all_of(words.none_of.begin(), words.none_of.end(), single);
  for (const auto& group : words.all_of) from_columns = from_columns && std::all_of(group.begin(), group.end(), single);
  std::vector<std::string> counted = query_words;  // the words of the groups, then the excluded ones
  for (const auto& t : words.none_of) counted.push_back(t.words[0]);
  const auto counted_at = [&counted](const std::string& w) {
    return static_cast<std::size_t>(std::find(counted.begin(), counted.end(), w) - counted.begin());
  };

  const int rows = PQntuples(res);
  out.found.reserve(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) {
    if (PQgetisnull(res, i, 1)) continue;  // no candidate: the row carries the statistics only
    const auto column = [&](int col) {
      return std::string_view(PQgetvalue(res, i, col), static_cast<std::size_t>(PQgetlength(res, i, col)));
    };
    std::optional<std::string_view> value_text;
    if (from_columns && !PQgetisnull(res, i, 7)) value_text = plain_string_text(column(7), options.json_limits);
    if (from_columns && (value_text || PQgetisnull(res, i, 7))) {
      // The filter's conditions again, on the columns (as matches_filter on the record).
      const auto maybe = [&](int col) {
        return PQgetisnull(res, i, col) ? std::optional<std::string_view>() : column(col);
      };
      const std::int64_t created_at = to_int64(column(13));
      if ((f.type && column(3) != f.type->str()) || (f.mime_type && maybe(9) != *f.mime_type) ||
          (f.created_by && maybe(12) != *f.created_by) || column(1).substr(0, f.id_prefix.size()) != f.id_prefix ||
          (f.created_after && created_at < *f.created_after) || (f.created_before && created_at >= *f.created_before)) {
        continue;
      }
      const ColumnWords cw = count_words({column(4), column(5), value_text.value_or(std::string_view())}, counted);
      bool match = true;
      for (const auto& group : words.all_of) {
        match = match && std::any_of(group.begin(), group.end(),
                                     [&](const detail::QueryTerm& t) { return cw.total(counted_at(t.words[0])) > 0; });
      }
      for (std::size_t k = query_words.size(); k < counted.size(); ++k) match = match && cw.total(k) == 0;
      if (!match) continue;
      detail::SearchCandidate c{
          nullptr, bm25.score_of([&cw](std::size_t k) { return cw.total(k); }, cw.length), std::nullopt, {}};
      bool in[3] = {false, false, false};
      for (std::size_t k = 0; k < query_words.size(); ++k) {
        if (cw.total(k) > 0) c.matched.words.push_back(query_words[k]);
        for (std::size_t field = 0; field < 3; ++field) in[field] = in[field] || cw.n[k][field] > 0;
      }
      if (in[0]) c.matched.fields.emplace_back("title");
      if (in[1]) c.matched.fields.emplace_back("description");
      if (in[2]) c.matched.fields.emplace_back("value");
      out.found.push_back({std::string(column(1)), static_cast<std::uint64_t>(to_int64(column(2))), std::move(c)});
      continue;
    }
    ArtifactPtr r;
    try {
      r = decode(res, i);
    } catch (const storage_error&) {
      continue;  // a damaged row: list() does not show it either (fetch it to get the error)
    }
    if (!detail::matches_filter(*r, f)) continue;
    const detail::RecordWords rw = detail::record_words(*r);
    if (!detail::matches_words(rw, words)) continue;
    detail::SearchCandidate c{nullptr, bm25.score(rw), std::nullopt, {}};
    detail::describe_word_match(rw, query_words, c.matched);
    std::string id = r->id();
    const std::uint64_t version = r->version();
    c.record = std::move(r);
    out.found.push_back({std::move(id), version, std::move(c)});
  }
  return out;
}

ArtifactPtr PostgresArtifactStore::Impl::word_record(const PGresult* res, const std::string& id,
                                                     std::uint64_t version) const {
  if (!res) return nullptr;
  const std::string version_text = std::to_string(version);
  for (int i = 0; i < PQntuples(res); ++i) {
    if (PQgetisnull(res, i, 1) || id != PQgetvalue(res, i, 1) || version_text != PQgetvalue(res, i, 2)) continue;
    try {
      return decode(res, i);
    } catch (const storage_error&) {
      return nullptr;  // a damaged row: list() does not show it either (fetch it to get the error)
    }
  }
  return nullptr;
}

std::vector<detail::SearchCandidate> PostgresArtifactStore::Impl::exact_candidates(const std::string& tenant_id,
                                                                                   const SearchQuery& q,
                                                                                   const Embedding& vector) {
  const auto& f = q.filter;
  const auto sql = sql_filter(tenant_id, f);
  if (!sql || !fits_pg_text(vector.model)) return {};  // nothing stored can match
  const std::string dimension = std::to_string(vector.values.size());
  // One statement: the tenant's versions in scope with a vector of the model, after the filters SQL can check.
  Result res = with_connection([&](Impl::Connection& c, bool) {
    Impl::Params p;
    p.add(tenant_id).add(sql->range.lower).add(sql->range.upper).add(vector.model).add(dimension).add(sql->type);
    p.add(f.mime_type).add(f.created_by).add(sql->after).add(sql->before);
    return run(c, q.all_versions ? vectors_all : vectors_latest, p);
  });
  return similar_rows(res.get(), vector, f);
}

std::vector<detail::SearchCandidate> PostgresArtifactStore::Impl::similar_rows(
    const PGresult* res, const Embedding& vector, const SearchFilter& filter,
    const std::vector<detail::VectorHit>* hits, const PageRecords* records) const {
  std::unordered_map<std::string, double> exact;  // "id\0version" -> the hit's exact cosine
  if (hits) {
    for (const auto& h : *hits) {
      if (h.exact) exact.emplace(h.id + '\0' + std::to_string(h.version), *h.exact);
    }
  }
  std::vector<detail::SearchCandidate> out;
  for (int i = 0; i < PQntuples(res); ++i) {
    if (PQgetisnull(res, i, 1)) continue;  // no candidate: the row carries other columns only
    ArtifactPtr r;
    if (records && PQgetisnull(res, i, 3)) {
      // A record kept from an earlier page: the row says it is still there (and the latest, unless every version is
      // searched).
      const auto it = records->kept.find(std::string(PQgetvalue(res, i, 1)) + '\0' + PQgetvalue(res, i, 2));
      if (it == records->kept.end()) continue;
      r = it->second;
    } else {
      try {
        r = decode(res, i);
      } catch (const storage_error&) {
        continue;  // a damaged row: list() does not show it either (fetch it to get the error)
      }
      if (records) {
        const auto it = records->keep.find(r->id() + '\0' + std::to_string(r->version()));
        if (it != records->keep.end()) {
          std::size_t bytes = 0;
          for (int col = 0; col < 15; ++col) bytes += static_cast<std::size_t>(PQgetlength(res, i, col));
          this->records.keep(r->tenant_id(), r->id(), r->version(), it->second, r,
                             detail::RecordCache::record_bytes(bytes));
        }
      }
    }
    if (!detail::matches_filter(*r, filter)) continue;
    double similarity = 0;
    if (const auto it = exact.find(r->id() + '\0' + std::to_string(r->version())); it != exact.end()) {
      similarity = it->second;
    } else {
      const auto values = PQgetisnull(res, i, 15) ? std::nullopt : bytea_vector(PQgetvalue(res, i, 15));
      if (!values || values->size() != vector.values.size()) continue;
      similarity = detail::cosine(vector.values, *values);
    }
    detail::SearchCandidate c{std::move(r), std::nullopt, similarity, {}};
    c.matched.similarity = c.similarity;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<detail::SearchCandidate> PostgresArtifactStore::Impl::similar_candidates(const std::string& tenant_id,
                                                                                     const SearchQuery& q,
                                                                                     const detail::PreparedSearch& p,
                                                                                     std::size_t want,
                                                                                     SearchPage* page) {
  const Embedding& vector = *p.vector;
  if (!fits_pg_text(tenant_id) || !fits_pg_text(vector.model)) return {};  // nothing stored can match
  const std::size_t dimension = vector.values.size();
  const std::string dimension_text = std::to_string(dimension);
  // This process's index of (tenant, model), caught up with every change committed before this call. At first,
  // and when the changes it has not seen were pruned since, it starts from every current vector instead.
  const detail::ReadVectorChanges read = [&](const std::string& tenant, const std::string& model, std::uint64_t after,
                                             const detail::VectorChangeSink& sink) {
    return with_connection([&](Impl::Connection& c, bool) {
      bool any = false;
      detail::VectorChange ch;  // one change object, handed to `sink` row after row
      const auto hand = [&] {
        sink(ch);
        any = true;
      };
      const auto vector_of = [&](const PGresult* res, int row, int column) -> std::optional<std::vector<float>> {
        if (PQgetisnull(res, row, column)) return std::nullopt;
        auto values = bytea_vector(PQgetvalue(res, row, column));
        if (!values || values->size() != dimension) return std::nullopt;  // of another dimension: not indexed
        return values;
      };
      // What a filter reads of the version in `row`, from column `at` on (type, mime_type, created_by,
      // created_at, metadata: detail::kept_filter_fields).
      const auto fields_of = [&](const PGresult* res, int row, int at,
                                 bool binary = false) -> std::shared_ptr<const void> {
        if (PQgetisnull(res, row, at)) return nullptr;
        const auto text = [&](int col) {
          return std::string_view(PQgetvalue(res, row, col), static_cast<std::size_t>(PQgetlength(res, row, col)));
        };
        const auto optional_text = [&](int col) {
          return PQgetisnull(res, row, col) ? std::nullopt : std::optional<std::string_view>(text(col));
        };
        const std::int64_t created_at =
            binary ? binary_int64(PQgetvalue(res, row, at + 3)) : to_int64(PQgetvalue(res, row, at + 3));
        return detail::kept_filter_fields(ch.seq, text(at), optional_text(at + 1), optional_text(at + 2), created_at,
                                          PQgetisnull(res, row, at + 4) ? std::string_view("{}") : text(at + 4),
                                          options.json_limits);
      };
      // Every vector, in PostgreSQL's binary format (raw bytes: half what hex text takes, and no parsing), each row
      // into the index as it arrives (single-row mode): the server's work, the transfer and the index's overlap, and
      // the answer (150 MB at 100,000 vectors of 384 dimensions) is never all in memory. The first row carries the
      // sequence number the vectors are current at and how many versions the tenant has (room made for that many).
      // The adds carry no sequence number: the last change, after every row, moves the index to it. An answer that
      // fails part-way (the server, the connection, a row the index could not take) leaves a new, empty index at
      // sequence 0, so that the next query reads every vector again: no half of a tenant's vectors passes for all.
      const auto start_over = [&] {
        Impl::Params p;
        p.add(tenant).add(model).add(dimension_text);
        std::uint64_t seq = 0;
        bool first = true, added = false;
        const detail::pg::RowSink each_row = [&](const PGresult* r) {
          if (first) {
            first = false;
            seq = static_cast<std::uint64_t>(binary_int64(PQgetvalue(r, 0, 0)));
            if (seq == 0) return;
            ch = detail::VectorChange();
            ch.coming = static_cast<std::size_t>(std::max<std::int64_t>(0, binary_int64(PQgetvalue(r, 0, 9))));
            hand();
            ch.coming = 0;
          }
          if (seq == 0) return;
          const auto bytes = static_cast<std::size_t>(PQgetlength(r, 0, 3));
          if (PQgetisnull(r, 0, 3) || bytes != dimension * sizeof(float)) return;  // none, or another dimension
          ch.vector.resize(dimension);
          const auto* raw = reinterpret_cast<const unsigned char*>(PQgetvalue(r, 0, 3));
          for (std::size_t k = 0; k < dimension; ++k, raw += 4) {  // float32, little-endian, as stored
            const std::uint32_t bits = std::uint32_t{raw[0]} | std::uint32_t{raw[1]} << 8 |
                                       std::uint32_t{raw[2]} << 16 | std::uint32_t{raw[3]} << 24;
            std::memcpy(&ch.vector[k], &bits, sizeof bits);
          }
          ch.id.assign(PQgetvalue(r, 0, 1), static_cast<std::size_t>(PQgetlength(r, 0, 1)));
          ch.version = static_cast<std::uint64_t>(binary_int64(PQgetvalue(r, 0, 2)));
          ch.seq = seq;  // the entry's life, as its fields keep it (detail::FilterFields::seq)
          ch.fields = fields_of(r, 0, 4, true);
          ch.seq = 0;
          added = true;
          hand();
        };
        try {
          run_rows(c, all_vectors, p, each_row);
        } catch (...) {
          if (added) {
            ch = detail::VectorChange();
            ch.reset = true;
            hand();
          }
          throw;
        }
        if (seq == 0) return;  // the tenant never wrote
        // A change that changes nothing (no id is ""), so that the next read starts after `seq`.
        ch = detail::VectorChange();
        ch.seq = seq;
        ch.removed = true;
        hand();
      };
      if (after == 0) {
        start_over();
        return any;
      }
      const std::string after_text = std::to_string(after);
      Impl::Params p;
      p.add(tenant).add(after_text).add(model).add(dimension_text);
      auto res = run(c, read_changes, p);
      if (PQntuples(res.get()) == 0) return any;
      if (static_cast<std::uint64_t>(to_int64(PQgetvalue(res.get(), 0, 5))) > after) {
        // Changes this index has not seen were pruned: it starts over.
        ch.reset = true;
        hand();
        ch.reset = false;
        start_over();
        return any;
      }
      for (int i = 0; i < PQntuples(res.get()); ++i) {
        if (PQgetisnull(res.get(), i, 0)) continue;  // no change: the row carries pruned_through only
        ch = detail::VectorChange();
        ch.seq = static_cast<std::uint64_t>(to_int64(PQgetvalue(res.get(), i, 0)));
        ch.id.assign(PQgetvalue(res.get(), i, 1), static_cast<std::size_t>(PQgetlength(res.get(), i, 1)));
        ch.version = static_cast<std::uint64_t>(to_int64(PQgetvalue(res.get(), i, 2)));
        ch.removed = PQgetvalue(res.get(), i, 3)[0] == 't';
        if (!ch.removed) {
          auto values = vector_of(res.get(), i, 4);
          if (values) {
            ch.vector = std::move(*values);
            ch.fields = fields_of(res.get(), i, 6);
          } else {
            ch.removed = true;  // the vector is gone since (its removal follows), or of another dimension
          }
        }
        hand();
      }
      return any;
    });
  };
  // The index as this process has it, without asking the server (`seen`: the last change it applied). The first
  // fetch of candidates also says whether anything changed since (same snapshot): usually not, and then the warm
  // query is one round trip. When something did (or the index has seen nothing yet), it catches up from
  // cairn_search_changes and asks again; from then on the index holds every change committed before this call, so
  // changes committed later do not send it back (the rows decide what is returned, as always).
  std::uint64_t seen = 0;
  const detail::ReadVectorChanges nothing = [](const std::string&, const std::string&, std::uint64_t,
                                               const detail::VectorChangeSink&) { return false; };
  auto index = vectors.current(tenant_id, vector.model, dimension, nothing, &seen);
  bool caught_up = seen == 0;
  if (caught_up) index = vectors.current(tenant_id, vector.model, dimension, read, &seen);
  const std::string all_versions = q.all_versions ? "true" : "false";

  // Candidates from the index, checked against the rows (present, the latest unless all versions are searched,
  // the filters) and scored by the exact cosine of the stored vectors: a page and one more first (what a plain
  // hnswlib query returns), 4 times as many each round after, until a page and one more pass or the index has no
  // more. The index's walk already skips what its kept fields and versions rule out, so the first round usually
  // answers; later rounds are for rows the index could not judge (metadata it did not keep, a newer version without
  // a vector, a page after a cursor).
  const std::size_t first = page ? q.limit + 1 : want;
  // Of what `accept` let through, in that order: the sequence number of its index entry's change when the index kept
  // its fields. Copied in accept, under the index's lock: another thread's catch-up may drop the fields after.
  std::vector<std::optional<std::uint64_t>> accepted;
  const detail::VectorIndex::Accept accept = [&q, &accepted](const std::string& id, std::uint64_t, const void* tag) {
    if (id.compare(0, q.filter.id_prefix.size(), q.filter.id_prefix) != 0) return false;
    const auto* fields = static_cast<const detail::FilterFields*>(tag);
    if (fields && fields->metadata && !detail::matches_filter(id, *fields, q.filter)) return false;
    accepted.push_back(fields ? std::optional<std::uint64_t>(fields->seq) : std::nullopt);
    return true;
  };
  const std::vector<detail::VectorIndex::Bound> bounds = detail::filter_bounds(q.filter);
  // Records kept from earlier pages (RecordCache) stand for their rows while the statement finds nothing changed
  // since `seen`: the snapshot then holds what the index held at `seen`, so an entry added by a change up to it is
  // the version's life there (a version removed and stored again is another entry, added later). When something
  // changed, the page is asked again without them.
  bool use_kept = records.max_bytes() > 0;
  for (std::size_t k = first;;) {
    // A page ranks by the exact cosine: versions near the k-th come too (hybrid's list is cut at `want` as the
    // other stores cut theirs).
    // The filter is checked in memory where the index kept the version's fields (detail::FilterFields), so that
    // a selective filter costs one walk; the rows check it again.
    accepted.clear();
    const std::vector<detail::VectorHit> found = index->search_tagged(
        vector.values, k, accept, page ? detail::VectorIndex::near_tie : 0, q.ef, !q.all_versions, bounds);
    // The rows' vectors are read only where the index's copy does not give the exact cosine (VectorHit::exact).
    std::vector<std::string> ids, versions, read_vector, kept;
    PageRecords page_records;
    for (const auto& h : found) {
      ids.push_back(h.id);
      versions.push_back(std::to_string(h.version));
      read_vector.emplace_back(h.exact ? "f" : "t");
      const std::optional<std::uint64_t> entry_seq = accepted.at(h.accepted);
      bool is_kept = false;
      if (use_kept && entry_seq && *entry_seq <= seen) {
        std::string key = h.id + '\0' + versions.back();
        ArtifactPtr record = h.exact ? records.find(tenant_id, h.id, h.version, *entry_seq) : nullptr;
        is_kept = record != nullptr;
        if (is_kept) {
          page_records.kept.emplace(std::move(key), std::move(record));
        } else {
          page_records.keep.emplace(std::move(key), *entry_seq);
        }
      }
      kept.emplace_back(is_kept ? "t" : "f");
    }
    const std::string ids_text = array_literal(ids), versions_text = array_literal(versions);
    const std::string read_vector_text = array_literal(read_vector), kept_text = array_literal(kept);
    const std::string seen_text = std::to_string(seen);
    Result res = with_connection([&](Impl::Connection& c, bool) {
      Impl::Params params;
      params.add(tenant_id).add(ids_text).add(versions_text).add(vector.model).add(all_versions).add(seen_text);
      params.add(read_vector_text).add(kept_text);
      return run(c, fetch_candidates, params);
    });
    const bool changed = PQgetvalue(res.get(), 0, 16)[0] == 't';
    if (changed && (!caught_up || !page_records.kept.empty())) {
      if (caught_up) use_kept = false;  // changed since the catch-up too: the rows decide, as below
      index = vectors.current(tenant_id, vector.model, dimension, read, &seen);
      caught_up = true;
      k = first;
      continue;
    }
    // Nothing changed up to this snapshot (the index held every change before the call), or the changes came after
    // the catch-up: then the rows decide, and what they hold is not kept under the index's entries.
    if (changed) page_records.keep.clear();
    caught_up = true;
    std::vector<detail::SearchCandidate> near = similar_rows(res.get(), vector, q.filter, &found, &page_records);
    if (page) {
      *page = detail::rank_search_page(near, q, p);
      if (page->next_cursor || found.size() < k) return near;
    } else if (near.size() >= want || found.size() < k) {
      std::sort(near.begin(), near.end(), [](const detail::SearchCandidate& a, const detail::SearchCandidate& b) {
        return detail::hit_before(*a.similarity, *a.record, *b.similarity, *b.record);  // the scan's order
      });
      if (near.size() > want) near.resize(want);
      return near;
    }
    k *= 4;
  }
}

std::size_t PostgresArtifactStore::reindex(const std::string& tenant_id) {
  detail::check_tenant(tenant_id);
  if (!fits_pg_text(tenant_id)) return 0;
  const auto& embedder = impl_->options.embedder;
  const std::optional<std::string> model = embedder ? std::optional<std::string>(embedder->model()) : std::nullopt;
  if (model) require_pg_text("reindex: embedder.model", *model);
  impl_->start_folder();
  const auto count = [&] {
    return impl_->with_connection([&](Impl::Connection& c, bool) {
      Impl::Params p;
      p.add(tenant_id).add(model);
      auto res = impl_->run(c, reindex_count, p);
      return static_cast<std::uint64_t>(to_int64(PQgetvalue(res.get(), 0, 0)));
    });
  };
  const std::uint64_t total = count();
  const auto report = [&](std::uint64_t done) {
    if (!impl_->options.observer) return;
    Event e;
    e.kind = EventKind::index;
    e.operation = "reindex";
    e.tenant = tenant_id;
    e.items = done;
    e.total = total;
    impl_->options.observer->on_event(e);
  };
  std::size_t indexed = 0;
  std::uint64_t done = 0;
  std::string after_id;
  std::string after_version = "0";
  for (;;) {
    // A batch: read, then tokenize and embed (outside any transaction), then write in one transaction.
    struct Item {
      ArtifactPtr record;
      std::string write_token;  // which record this version is: the words and vector are written for it alone
      bool needs_words;
      std::optional<IndexedWords> words;
      std::optional<std::string> vector;
    };
    std::vector<Item> items;
    std::size_t rows = 0;
    impl_->with_connection([&](Impl::Connection& c, bool) {
      Impl::Params p;
      p.add(tenant_id).add(model).add(after_id).add(after_version);
      auto res = impl_->run(c, reindex_batch, p);
      rows = static_cast<std::size_t>(PQntuples(res.get()));
      items.clear();
      for (int i = 0; i < PQntuples(res.get()); ++i) {
        after_id.assign(PQgetvalue(res.get(), i, 1), static_cast<std::size_t>(PQgetlength(res.get(), i, 1)));
        after_version = PQgetvalue(res.get(), i, 2);
        try {
          items.push_back(
              {impl_->decode(res.get(), i),
               std::string(PQgetvalue(res.get(), i, 16), static_cast<std::size_t>(PQgetlength(res.get(), i, 16))),
               PQgetvalue(res.get(), i, 15)[0] == 't',
               {},
               {}});
        } catch (const storage_error&) {
          // a damaged row: left as it is (fetch it to get the error); it stays unindexed
        }
      }
      return 0;
    });
    if (rows == 0) break;
    std::vector<std::string> texts;
    for (auto& item : items) {
      if (item.needs_words) item.words = indexed_words(*item.record);
      if (embedder) texts.push_back(embedder->text_of(*item.record));
    }
    if (embedder) {
      // Versions that have a vector of the model already get the same one again: it is not written twice.
      auto vectors = detail::embed_checked(*embedder, texts);
      for (std::size_t i = 0; i < items.size(); ++i) items[i].vector = vector_bytea(vectors[i].values);
    }
    indexed += impl_->with_connection([&](Impl::Connection& c, bool) {
      const std::string prefix = *impl_->lexeme_prefix(c, tenant_id, true);
      std::size_t n = 0;
      std::int64_t latest = 0, latest_words = 0, versions = 0, version_words = 0;
      std::vector<std::string> vector_ids, vector_versions;
      impl_->simple(c, "BEGIN", "reindexing");
      try {
        for (const auto& item : items) {
          const std::string version = std::to_string(item.record->version());
          bool wrote = false;
          if (item.words) {
            const std::string tsvector = tsvector_literal(*item.words, prefix);
            Impl::Params p;
            p.add(tenant_id).add(item.record->id()).add(version).add(tsvector).add(item.words->count);
            p.add(item.write_token);
            auto res = impl_->run(c, reindex_words, p);
            if (PQntuples(res.get()) == 1) {
              wrote = true;
              const std::int64_t words = to_int64(item.words->count);
              ++versions;
              version_words += words;
              if (PQgetvalue(res.get(), 0, 0)[0] == 't') {
                ++latest;
                latest_words += words;
              }
            }
          }
          if (item.vector) {
            Impl::Params p;
            p.add(tenant_id).add(item.record->id()).add(version).add(model).add(item.vector).add(item.write_token);
            auto res = impl_->run(c, reindex_vector, p);
            if (PQgetvalue(res.get(), 0, 0)[0] != '0') {
              wrote = true;
              vector_ids.push_back(item.record->id());
              vector_versions.push_back(version);
            }
          }
          if (wrote) ++n;
        }
        if (n > 0) {
          const std::string latest_text = std::to_string(latest), latest_words_text = std::to_string(latest_words);
          const std::string versions_text = std::to_string(versions);
          const std::string version_words_text = std::to_string(version_words);
          const std::string ids = array_literal(vector_ids), numbers = array_literal(vector_versions);
          const std::string model_text = model ? *model : std::string();
          Impl::Params p;
          p.add(tenant_id).add(latest_text).add(latest_words_text).add(versions_text).add(version_words_text);
          p.add(ids).add(numbers).add(model_text);
          impl_->run(c, reindex_finish, p);
        }
        impl_->simple(c, "COMMIT", "reindexing");
      } catch (...) {
        try {
          impl_->simple(c, "ROLLBACK", "reindexing");
        } catch (const error&) {
          // the connection is gone, and the transaction with it
        }
        throw;
      }
      return n;
    });
    done += rows;
    report(std::min(done, total));
  }
  return indexed;
}

CAIRN_END_NAMESPACE
