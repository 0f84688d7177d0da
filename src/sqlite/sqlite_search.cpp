// SqliteArtifactStore: search (by words through the FTS5 index, by similarity through this process's vector index
// caught up from cairn_search_changes, hybrid) and reindex.
#include "cairn/store/sqlite_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sqlite_store_impl.hpp"

CAIRN_BEGIN_NAMESPACE

SearchPage SqliteArtifactStore::search(const std::string& tenant_id, const SearchQuery& query) const {
  // Prepared once (checked, and its text embedded when it needs a vector), then routed by what it ranks by: words
  // alone run on the FTS5 index; similarity alone (latest versions) on the vector index, exact unless the query sets
  // ef; hybrid (latest versions, not exact) fuses the two; everything else (filters alone, exact hybrid, every
  // version with a vector) is the default scan.
  const detail::PreparedSearch p = detail::prepare_search(*this, tenant_id, query);
  const bool on_index = !query.all_versions;
  if (p.by_text && !p.by_vector) return impl_->search_words(tenant_id, query, p);
  if (on_index && p.by_vector && !p.by_text) return impl_->search_similar(tenant_id, query, p);
  if (on_index && p.by_vector && p.by_text && !query.exact) return impl_->search_hybrid(tenant_id, query, p);
  return detail::default_search(*this, tenant_id, query, p);
}

std::size_t SqliteArtifactStore::reindex(const std::string& tenant_id) {
  detail::check_tenant(tenant_id);
  auto conn = impl_->pool.acquire();
  const auto& embedder = impl_->options.embedder;
  // Progress: the versions without words, and those without a vector of the model, counted now.
  const std::uint64_t total = Impl::count_of(*conn, unindexed_all, tenant_id) +
                              (embedder ? Impl::count_of(*conn, unembedded_all, tenant_id, embedder->model()) : 0);
  std::uint64_t seen = 0;
  const auto advanced = [&](std::size_t rows) {
    seen += rows;
    impl_->report_index("reindex", tenant_id, std::min(seen, total), total);
  };
  std::size_t done = impl_->index_unindexed(*conn, tenant_id, advanced);
  if (!embedder) return done;
  // Versions without a vector of the embedder's model: embedded in batches outside any transaction, each batch
  // then kept in one (a version removed, or replaced by a record stored again under its id, meanwhile is skipped),
  // so an interrupted reindex keeps what it did.
  const std::string model = embedder->model();
  std::string after_id;
  std::int64_t after_version = 0;
  for (;;) {
    std::vector<ArtifactPtr> batch;
    std::size_t rows = 0;
    {
      Impl::Query q(*conn, unembedded_next);
      q.bind(1, tenant_id).bind(2, after_id).bind(3, after_version).bind(4, model);
      while (q.step()) {
        ++rows;
        after_id = std::string(q.text(1));
        after_version = q.int64(2);
        try {
          batch.push_back(impl_->record(q));
        } catch (const storage_error&) {
        }
      }
    }
    if (rows == 0) break;
    std::vector<std::string> texts;
    for (const auto& r : batch) texts.push_back(embedder->text_of(*r));
    const std::vector<Embedding> made = detail::embed_checked(*embedder, texts);
    Impl::WriteTransaction tx(*conn);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto& r = *batch[i];
      const auto version = static_cast<std::int64_t>(r.version());
      const auto& v = made[i].values;
      // Removed, or removed and stored again (versions from 1 again), while it was embedded: the vector is the
      // text of a record that is gone, not of the version there now.
      if (!impl_->still_the_record(*conn, r)) continue;
      Impl::Query(*conn, vector_upsert)
          .bind(1, tenant_id)
          .bind(2, r.id())
          .bind(3, version)
          .bind(4, model)
          .bind(5, static_cast<std::int64_t>(v.size()))
          .bind_blob(6, v.data(), v.size() * sizeof(float))
          .run();
      if (sqlite3_changes(conn->db()) == 0) continue;  // it has a vector of the model by now
      // A vector of another model it replaced leaves that model's index; the new one joins this model's.
      // Only a latest version joins an index (older ones are searched by the scan, with all_versions).
      Impl::Query(*conn, change_insert)
          .bind(1, tenant_id)
          .bind(2, std::string_view("", 0))
          .bind(3, r.id())
          .bind(4, version)
          .bind(5, std::int64_t{1})
          .run();
      bool latest = false;
      {
        Impl::Query h(*conn, head_latest);
        h.bind(1, tenant_id).bind(2, r.id());
        latest = h.step() && h.int64(0) == version;
      }
      if (latest) {
        Impl::Query(*conn, change_insert)
            .bind(1, tenant_id)
            .bind(2, model)
            .bind(3, r.id())
            .bind(4, version)
            .bind(5, std::int64_t{0})
            .run();
      }
      ++done;
    }
    impl_->prune_changes(*conn);
    tx.commit();
    advanced(rows);
  }
  return done;
}

std::shared_ptr<const void> SqliteArtifactStore::Impl::filter_fields(const Query& q, int at, std::uint64_t seq,
                                                                     const JsonLimits& limits) {
  if (q.is_null(at)) return nullptr;
  const auto optional_text = [&q](int col) {
    return q.is_null(col) ? std::nullopt : std::optional<std::string_view>(q.text(col));
  };
  return detail::kept_filter_fields(seq, q.text(at), optional_text(at + 1), optional_text(at + 2), q.int64(at + 3),
                                    q.text(at + 4), limits);
}

bool SqliteArtifactStore::Impl::read_changes(Connection& conn, const std::string& tenant, const std::string& model,
                                             std::uint64_t after, const JsonLimits& limits,
                                             const detail::VectorChangeSink& sink) {
  detail::VectorChange c;
  const auto vector_of = [&c](std::string_view blob) {
    c.vector.resize(blob.size() / sizeof(float));
    if (!c.vector.empty()) std::memcpy(c.vector.data(), blob.data(), c.vector.size() * sizeof(float));
  };
  if (after == 0) {
    std::uint64_t last = 0;
    {
      Query q(conn, changes_last);
      if (q.step() && !q.is_null(0)) last = static_cast<std::uint64_t>(q.int64(0));
    }
    if (last == 0) return false;
    {
      Query n(conn, heads_count);
      n.bind(1, tenant);
      if (n.step() && n.int64(0) > 0) {
        c.coming = static_cast<std::size_t>(n.int64(0));
        sink(c);
        c.coming = 0;
      }
    }
    Query q(conn, vectors_current);
    q.bind(1, tenant).bind(2, model);
    bool any = false;
    while (q.step()) {
      c.seq = last;
      c.id.assign(q.text(0));
      c.version = static_cast<std::uint64_t>(q.int64(1));
      vector_of(q.blob(2));
      c.fields = filter_fields(q, 3, c.seq, limits);
      sink(c);
      any = true;
    }
    if (!any) {
      // Nothing of this model yet: a change that changes nothing, so the next read starts after `last`.
      detail::VectorChange none;
      none.seq = last;
      none.removed = true;
      sink(none);
    }
    return true;
  }
  {
    // Changes up to `through` were pruned: an index that has seen less has missed some of them, and starts over.
    Query t(conn, changes_pruned);
    if (t.step() && static_cast<std::uint64_t>(t.int64(0)) > after) {
      detail::VectorChange reset;
      reset.reset = true;
      sink(reset);
      read_changes(conn, tenant, model, 0, limits, sink);
      return true;
    }
  }
  Query q(conn, changes_after);
  q.bind(1, tenant).bind(2, model).bind(3, static_cast<std::int64_t>(after));
  bool any = false;
  while (q.step()) {
    c.seq = static_cast<std::uint64_t>(q.int64(0));
    c.id.assign(q.text(1));
    c.version = static_cast<std::uint64_t>(q.int64(2));
    c.removed = q.int64(3) != 0;
    c.vector.clear();
    c.fields = nullptr;
    if (!c.removed) {
      vector_of(q.blob(4));  // empty when gone since: not indexed
      if (!c.vector.empty()) c.fields = filter_fields(q, 5, c.seq, limits);
    }
    sink(c);
    any = true;
  }
  return any;
}

std::shared_ptr<const detail::VectorIndex> SqliteArtifactStore::Impl::vector_index(Connection& conn,
                                                                                   const std::string& tenant,
                                                                                   const Embedding& query,
                                                                                   std::size_t& unindexed) const {
  std::uint64_t seen = 0;
  auto index = vectors.current(
      tenant, query.model, query.values.size(),
      [this, &conn](const std::string& t, const std::string& m, std::uint64_t after,
                    const detail::VectorChangeSink& sink) {
        return read_changes(conn, t, m, after, options.json_limits, sink);
      },
      &seen);
  // Unindexed: versions that reindex would embed (none on a store without an embedder: nothing would). Counting
  // them probes a vector row per latest version of the tenant, so the count is kept per (tenant, model) and made
  // again only when the index applied a change since (every new version, removal and vector is one).
  unindexed = 0;
  if (!options.embedder || options.embedder->model() != query.model) return index;
  const auto key = std::make_pair(tenant, query.model);
  {
    std::lock_guard lock(unindexed_mutex);
    const auto it = unindexed_counts.find(key);
    if (it != unindexed_counts.end() && it->second.first == seen) {
      unindexed = it->second.second;
      return index;
    }
  }
  {
    Query u(conn, unindexed_vectors);
    u.bind(1, tenant).bind(2, query.model);
    unindexed = u.step() ? static_cast<std::size_t>(u.int64(0)) : 0;
  }
  // Kept only when this snapshot holds every change the index applied (another query may have caught the index up
  // in a newer snapshot than this one): then it is the count at `seen`, and any later change moves the sequence.
  std::uint64_t last = 0;
  {
    Query l(conn, changes_last);
    if (l.step() && !l.is_null(0)) last = static_cast<std::uint64_t>(l.int64(0));
  }
  if (last >= seen) {
    std::lock_guard lock(unindexed_mutex);
    unindexed_counts[key] = {seen, unindexed};
  }
  return index;
}

std::vector<detail::SearchCandidate> SqliteArtifactStore::Impl::similar_candidates(
    Connection& conn, const std::string& tenant, const SearchQuery& q, const detail::PreparedSearch& p,
    const detail::VectorIndex& index, std::size_t want, bool paged, std::size_t* ranked_before) const {
  const Embedding& query = *p.vector;
  const auto& cursor = p.cursor;
  const std::size_t dimension = query.values.size();
  using Found = detail::SearchCandidate;
  struct Accepted {
    ArtifactPtr record;         // null: accepted by its kept fields, its row read after the walk
    std::vector<float> vector;  // the row's, for a hit whose index copy cannot give the exact cosine
    // The sequence number of the index entry's change, when the index kept the version's fields: copied in
    // accept(), under the index's lock, since another thread's catch-up may drop the fields once the walk ends.
    std::optional<std::uint64_t> seq;
  };
  // The last change this read transaction sees, read when first needed. An index entry added by a change up to it is
  // the version's life this snapshot holds: the entry is in the index (caught up to this snapshot or past it), so
  // nothing removed it up to here, and a removed version stored again is another entry, added later.
  std::optional<std::uint64_t> last_change;
  const auto in_snapshot = [&](const std::optional<std::uint64_t>& seq) {
    if (!seq || records.max_bytes() == 0) return false;
    if (!last_change) {
      Query l(conn, changes_last);
      last_change = l.step() && !l.is_null(0) ? static_cast<std::uint64_t>(l.int64(0)) : 0;
    }
    return *seq <= *last_change;
  };
  // A candidate's row: still the latest version, with its record and (unless `record_only`: its exact score is
  // known) a vector of the model. With `record_only`, a record kept from an earlier page (RecordCache) of the
  // entry's life in this snapshot is the row's record: then no row is read.
  const auto read_row = [&](const std::string& id, std::uint64_t version, Accepted& out, bool record_only = false) {
    if (version > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
    const bool keep = in_snapshot(out.seq);
    if (keep && record_only) {
      out.record = records.find(tenant, id, version, *out.seq);
      if (out.record) return true;
    }
    Query row(conn, record_only ? candidate_record : candidate_get);
    row.bind(1, tenant).bind(2, id).bind(3, static_cast<std::int64_t>(version));
    if (!record_only) row.bind(4, query.model);
    if (!row.step()) return false;  // removed or replaced since the index saw it: never comes back
    try {
      out.record = record(row);
    } catch (const storage_error&) {
      return false;  // unreadable: the scan skips it too
    }
    if (keep) {
      records.keep(tenant, id, version, *out.seq, out.record,
                   detail::RecordCache::record_bytes(record_text_bytes(row)));
    }
    if (record_only) return true;
    const std::string_view v = row.blob(15);
    if (v.size() != dimension * sizeof(float)) return false;
    out.vector = floats_of(v);
    return true;
  };
  // With `kept` (no cursor to page from: that needs each candidate's exact cosine), a version whose fields the index
  // kept (detail::FilterFields) is checked against the filter in memory and only the page's rows are read after the
  // walk; a version without them is read as it is reached. Without `kept`, every candidate's row is read.
  const auto walk = [&](bool kept, std::vector<Accepted>& accepted, std::size_t& before) {
    std::set<std::pair<std::string, std::uint64_t>> before_cursor;  // asked twice when the graph falls back
    const auto accept = [&](const std::string& id, std::uint64_t version, const void* tag) {
      if (id.compare(0, q.filter.id_prefix.size(), q.filter.id_prefix) != 0) return false;
      const auto* fields = static_cast<const detail::FilterFields*>(tag);
      if (kept && fields && fields->metadata) {
        if (!detail::matches_filter(id, *fields, q.filter)) return false;
        accepted.push_back({});
        accepted.back().seq = fields->seq;
        return true;
      }
      Accepted a;
      if (fields) a.seq = fields->seq;
      if (!read_row(id, version, a) || !detail::matches_filter(*a.record, q.filter)) return false;
      if (paged && cursor && !detail::after_cursor(*cursor, detail::cosine(query.values, a.vector), *a.record)) {
        before_cursor.emplace(id, version);
        return false;
      }
      accepted.push_back(std::move(a));
      return true;
    };
    // A page ranks by the exact cosine: versions near the k-th come too (hybrid's list is the index's k, as the
    // in-memory store's).
    std::vector<detail::VectorHit> hits =
        index.search_tagged(query.values, want, accept, paged ? detail::VectorIndex::near_tie : 0, q.ef, false,
                            detail::filter_bounds(q.filter));
    before = before_cursor.size();
    return hits;
  };
  const bool kept = !(paged && cursor);
  std::vector<Accepted> accepted;  // what accept() let through, in that order (VectorHit::accepted)
  std::size_t before = 0;
  std::vector<detail::VectorHit> hits = walk(kept, accepted, before);
  if (kept) {
    // The page's rows. The index was caught up in this read transaction, so each is there and passes; one that is
    // not (another thread caught the shared index up past this snapshot) sends the query the way of the rows.
    for (const auto& hit : hits) {
      Accepted& a = accepted.at(hit.accepted);
      if (a.record) continue;
      const bool record_only = hit.exact.has_value();
      if (!read_row(hit.id, hit.version, a, record_only) || !detail::matches_filter(*a.record, q.filter)) {
        accepted.clear();
        hits = walk(false, accepted, before);
        break;
      }
    }
  }
  std::vector<Found> found;
  for (const auto& hit : hits) {
    Accepted& a = accepted.at(hit.accepted);
    // The exact score, as the scan's: from the index's copy of the vector, or from the row's when that copy is not
    // exact (VectorHit::exact).
    const double similarity = hit.exact ? *hit.exact : detail::cosine(query.values, a.vector);
    SearchMatch m;
    m.similarity = similarity;
    found.push_back({std::move(a.record), std::nullopt, similarity, std::move(m)});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return detail::hit_before(*a.similarity, *a.record, *b.similarity, *b.record);
  });
  if (ranked_before) *ranked_before = before;
  return found;
}

SearchPage SqliteArtifactStore::Impl::search_similar(const std::string& tenant, const SearchQuery& q,
                                                     const detail::PreparedSearch& p) const {
  auto conn = pool.acquire();
  ReadTransaction read(*conn);  // the index's catch-up and the candidates' rows see the same snapshot
  std::size_t unindexed = 0;
  const auto index = vector_index(*conn, tenant, *p.vector, unindexed);
  // A page and one more first (the candidates a plain hnswlib query returns).
  std::size_t ranked_before = 0;
  std::vector<detail::SearchCandidate> found =
      similar_candidates(*conn, tenant, q, p, *index, q.limit + 1, true, &ranked_before);
  SearchPage page = detail::rank_search_page(std::move(found), q, p, ranked_before);
  page.unindexed = unindexed;
  return page;
}

SearchPage SqliteArtifactStore::Impl::search_hybrid(const std::string& tenant, const SearchQuery& q,
                                                    const detail::PreparedSearch& p) const {
  auto conn = pool.acquire();
  ReadTransaction read(*conn);  // the words, the index's catch-up and the candidates see the same snapshot
  std::size_t word_unindexed = 0, vector_unindexed = 0;
  // Every version the words match, by its key (as search by words), fused with the 4 x limit nearest that pass the
  // filters (as the in-memory store; the cursor is applied to the fused ranking); the page's records alone are read.
  std::vector<detail::KeyedCandidate> found;
  for (auto& m : word_matches(*conn, tenant, q, p, word_unindexed, false)) {
    found.push_back({std::move(m.id), static_cast<std::uint64_t>(m.version), std::move(m.candidate)});
  }
  const auto index = vector_index(*conn, tenant, *p.vector, vector_unindexed);
  const std::size_t want = 4 * q.limit;
  std::vector<detail::SearchCandidate> near = similar_candidates(*conn, tenant, q, p, *index, want, false);
  if (near.size() > want) near.resize(want);
  detail::add_similar(found, std::move(near));
  SearchPage page = detail::rank_keyed_page(std::move(found), q, p, [&](const std::string& id, std::uint64_t v) {
    return version_record(*conn, tenant, id, v);
  });
  // Versions that either list could not see: the larger of the two counts.
  page.unindexed = std::max(word_unindexed, vector_unindexed);
  return page;
}

SearchPage SqliteArtifactStore::Impl::search_words(const std::string& tenant, const SearchQuery& q,
                                                   const detail::PreparedSearch& p) const {
  auto conn = pool.acquire();
  ReadTransaction read(*conn);  // the statistics, the matches and the page's records see the same snapshot
  std::size_t unindexed = 0;
  // The matches' keys and scores, ranked, and the records of the page alone; where the query needed a match's
  // record to decide it, every match was read with its record.
  std::vector<detail::KeyedCandidate> found;
  for (auto& m : word_matches(*conn, tenant, q, p, unindexed, false)) {
    found.push_back({std::move(m.id), static_cast<std::uint64_t>(m.version), std::move(m.candidate)});
  }
  SearchPage page = detail::rank_keyed_page(std::move(found), q, p, [&](const std::string& id, std::uint64_t v) {
    return version_record(*conn, tenant, id, v);
  });
  page.unindexed = unindexed;
  return page;
}

ArtifactPtr SqliteArtifactStore::Impl::version_record(Connection& conn, const std::string& tenant,
                                                      const std::string& id, std::uint64_t version) const {
  if (version > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return nullptr;
  Query r(conn, fetch_version);
  r.bind(1, tenant).bind(2, id).bind(3, static_cast<std::int64_t>(version));
  if (!r.step()) return nullptr;
  try {
    return record(r);
  } catch (const storage_error&) {
    return nullptr;  // unreadable: left out of the page, as the scan leaves it out
  }
}

std::vector<SqliteArtifactStore::Impl::WordMatch> SqliteArtifactStore::Impl::word_matches(
    Connection& conn, const std::string& tenant, const SearchQuery& q, const detail::PreparedSearch& p,
    std::size_t& unindexed, bool records) const {
  const detail::WordQuery& words = p.words;
  std::vector<WordMatch> found;
  // The tenant's statistics, kept by the writes (migration 5): BM25's N and average length over the versions
  // searched, whatever the filters (as the scan), and its latest versions without words (SearchPage::unindexed).
  std::int64_t heads = 0, latest = 0, latest_words = 0, versions = 0, version_words = 0;
  {
    Query s(conn, search_stats);
    s.bind(1, tenant);
    if (s.step()) {
      heads = s.int64(0);
      latest = s.int64(1);
      latest_words = s.int64(2);
      versions = s.int64(3);
      version_words = s.int64(4);
    }
  }
  unindexed = static_cast<std::size_t>(std::max<std::int64_t>(0, heads - latest));
  const auto number = tenant_of(conn, tenant, false);
  if (!number) return found;  // the tenant never stored anything
  const std::string prefix = tenant_prefix(*number);
  const auto upper = prefix_upper_bound(q.filter.id_prefix);
  // With every version that has words a latest one (no history), the tenant's rows of the index are the versions
  // searched: the postings alone count a word's documents, and a match needs no look at its head.
  const bool history = !q.all_versions && versions != latest;
  const std::size_t variant = (history ? 0 : 1) + (upper ? 2 : 0);
  const auto bind_scope = [&](Query& s) { s.bind(2, tenant).bind(3, q.filter.id_prefix).bind(4, upper); };
  const std::size_t documents = static_cast<std::size_t>(q.all_versions ? versions : latest);
  const std::size_t total_length = static_cast<std::size_t>(q.all_versions ? version_words : latest_words);
  const auto phrase = [&prefix](const detail::QueryTerm& t) {
    std::string out = "\"";
    for (const auto& w : t.words) out += (out.size() > 1 ? " " : "") + prefix + w;
    return out + "\"";
  };
  const std::vector<std::string> scored = words.words();
  std::vector<std::size_t> df(scored.size(), 0);
  for (std::size_t i = 0; i < scored.size(); ++i) {
    Query s(conn, history ? search_df_latest : search_df_rows);
    if (history) s.bind(2, tenant);
    const std::string match = phrase(detail::QueryTerm{{scored[i]}});
    s.bind(1, match);
    if (s.step()) df[i] = static_cast<std::size_t>(s.int64(0));
  }
  const double average = documents > 0 ? static_cast<double>(total_length) / static_cast<double>(documents) : 0;

  // The MATCH expression, from cairn's tokens, each quoted by cairn: (a OR b) AND (c) NOT (d) ... Phrases are
  // numbered in the order they appear, which is the order of cairn_hits's counts.
  std::string match;
  std::vector<int> phrase_of(scored.size(), -1);  // the single-word phrase that counts each scored word
  int phrases = 0;
  for (const auto& group : words.all_of) {
    match += match.empty() ? "(" : " AND (";
    for (std::size_t k = 0; k < group.size(); ++k) {
      match += (k ? " OR " : "") + phrase(group[k]);
      if (group[k].words.size() == 1) {
        const auto at = std::find(scored.begin(), scored.end(), group[k].words[0]) - scored.begin();
        if (phrase_of[static_cast<std::size_t>(at)] < 0) phrase_of[static_cast<std::size_t>(at)] = phrases;
      }
      ++phrases;
    }
    match += ")";
  }
  // Exclusions are a second MATCH the rows must not be in, not FTS5's NOT: under a NOT, FTS5 (3.40) reports no
  // instances of the phrases of an OR, which would lose words from the scores. With none, a term no row holds
  // (tenant numbers start at 1, so "0x" is nobody's).
  std::string excluded;
  for (const auto& t : words.none_of) excluded += (excluded.empty() ? "" : " OR ") + phrase(t);
  if (excluded.empty()) excluded = "\"0x\"";

  // The records are read with the matches where the query needs them to decide.
  records = records || !q.filter.metadata.empty() ||
            std::any_of(phrase_of.begin(), phrase_of.end(), [](int at) { return at < 0; });
  {
    Query s(conn, (records ? search_match : search_match_keys) + variant);
    bind_scope(s);
    s.bind(1, match).bind(10, excluded);
    const auto& f = q.filter;
    // Bound without a copy (SQLITE_STATIC): every bound string lives until the statement is done.
    const std::optional<std::string> type = f.type ? std::optional<std::string>(f.type->str()) : std::nullopt;
    s.bind(5, type).bind(6, f.mime_type).bind(7, f.created_by);
    if (f.created_after) s.bind(8, *f.created_after);
    if (f.created_before) s.bind(9, *f.created_before);
    constexpr int columns = 3;                 // title, description, value
    const int hits_column = records ? 15 : 2;  // after the record's columns, or the key's
    while (s.step()) {
      WordMatch match;
      ArtifactPtr r;
      if (records) {
        try {
          r = record(s);
        } catch (const storage_error&) {
          continue;  // unreadable: the scan skips it too
        }
        if (!detail::matches_filter(*r, f)) continue;  // metadata conditions (and the rest again)
        match.id = r->id();
        match.version = static_cast<std::int64_t>(r->version());
      } else {
        match.id = std::string(s.text(0));
        match.version = s.int64(1);
      }
      const std::string_view hits = s.blob(hits_column);
      const auto length = static_cast<double>(s.int64(hits_column + 1));
      const auto count = [&hits](int phrase_index, int column) {
        std::int32_t n = 0;
        const std::size_t at =
            (static_cast<std::size_t>(phrase_index) * columns + static_cast<std::size_t>(column)) * sizeof n;
        if (at + sizeof n <= hits.size()) std::memcpy(&n, hits.data() + at, sizeof n);
        return n;
      };
      // Words that only occur inside phrases have no count of their own: those records are read word by word.
      std::optional<detail::RecordWords> own;
      detail::SearchCandidate out{std::move(r), 0.0, std::nullopt, {}};
      bool in_title = false, in_description = false, in_value = false;
      for (std::size_t i = 0; i < scored.size(); ++i) {
        std::int32_t t = 0, d = 0, v = 0;
        if (phrase_of[i] >= 0) {
          t = count(phrase_of[i], 0);
          d = count(phrase_of[i], 1);
          v = count(phrase_of[i], 2);
        } else {
          if (!own) own = detail::record_words(*out.record);
          const auto n = [&](const std::vector<std::string>& ws) {
            return static_cast<std::int32_t>(std::count(ws.begin(), ws.end(), scored[i]));
          };
          t = n(own->title);
          d = n(own->description);
          v = n(own->value);
        }
        const double tf = static_cast<double>(t) + static_cast<double>(d) + static_cast<double>(v);
        if (tf == 0) continue;
        *out.bm25 +=
            detail::Bm25::weight(tf, static_cast<double>(df[i]), static_cast<double>(documents), length, average);
        out.matched.words.push_back(scored[i]);
        in_title = in_title || t > 0;
        in_description = in_description || d > 0;
        in_value = in_value || v > 0;
      }
      if (in_title) out.matched.fields.emplace_back("title");
      if (in_description) out.matched.fields.emplace_back("description");
      if (in_value) out.matched.fields.emplace_back("value");
      match.candidate = std::move(out);
      found.push_back(std::move(match));
    }
  }
  return found;
}

CAIRN_END_NAMESPACE
