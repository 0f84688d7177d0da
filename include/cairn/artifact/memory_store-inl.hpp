// cairn — the bodies of InMemoryArtifactStore (cairn/artifact/memory_store.hpp): its shards, records and search
// indexes. Header-only, memory_store.hpp includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB
// they are compiled once into cairn::compiled (src/compiled/artifact.cpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <forward_list>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/packed.hpp"
#include "cairn/artifact/search/filter_columns.hpp"
#include "cairn/artifact/search/pipeline.hpp"
#include "cairn/artifact/search/vector_index.hpp"
#include "cairn/artifact/search/word_index.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

class InMemoryArtifactStore::Impl {
 public:
  static constexpr std::uint64_t latest = ArtifactStore::latest;

  /// `shards` locks spread the tenants (at least 1).
  explicit Impl(std::size_t shards) : shards_(shards == 0 ? 1 : shards) {}

  /// A store that takes its time and ids from `options` (cairn/testing/clock.hpp makes them deterministic).
  explicit Impl(InMemoryStoreOptions options)
      : shards_(options.shards == 0 ? 1 : options.shards),
        clock_(std::move(options.clock)),
        ids_(std::move(options.ids)),
        bounded_(options.max_parsed_bytes != std::numeric_limits<std::size_t>::max()),
        shard_budget_(bounded_ ? options.max_parsed_bytes / shards_.size() : 0),
        embedder_(std::move(options.embedder)) {}

  [[nodiscard]] ArtifactPtr store(const ArtifactRecord& record) { return put(record, nullptr, embed(record)); }

  [[nodiscard]] ArtifactPtr store_if(const ArtifactRecord& record, std::uint64_t expected_version) {
    detail::check_store_if(record, expected_version);
    return put(record, &expected_version, embed(record));
  }

  /// Stores `record` with a vector the host made (checked as ArtifactStore::store_embedded says; with an embedder,
  /// of its model and dimension), which is kept instead of embedding the record.
  [[nodiscard]] ArtifactPtr store_embedded(const ArtifactRecord& record, const Embedding& embedding) {
    detail::check_tenant(record.tenant_id());
    detail::check_vector("store_embedded", embedding, embedder_.get());
    return put(record, nullptr, embedding);
  }

  /// The vector kept for a version (null when it has none or the version is gone).
  [[nodiscard]] std::optional<Embedding> embedding(const std::string& id, const std::string& tenant_id,
                                                   std::uint64_t version) const {
    const Shard& shard = shard_for(tenant_id);
    std::shared_lock lock(shard.mutex);
    const auto it = shard.entries.find(composite_key(tenant_id, id));
    if (it == shard.entries.end()) return std::nullopt;
    for (const auto& v : it->second.vectors) {
      if (v.first == version) return v.second;
    }
    return std::nullopt;
  }
  /// Always: vectors come from the embedder, or with the record (store_embedded).
  [[nodiscard]] bool keeps_embeddings() const noexcept { return true; }
  [[nodiscard]] std::shared_ptr<Embedder> embedder() const { return embedder_; }

  [[nodiscard]] ArtifactPtr fetch(const std::string& id, const std::string& tenant_id,
                                  std::uint64_t version = latest) const {
    const Shard& shard = shard_for(tenant_id);
    const std::string& key = composite_key(tenant_id, id);
    std::shared_lock lock(shard.mutex);
    const auto it = shard.entries.find(key);
    if (it == shard.entries.end()) return nullptr;
    const Entry& entry = it->second;
    if (!bounded_) {
      const std::uint64_t newest = entry.latest->version();
      if (version == latest || version == newest) return entry.latest;
      const ArtifactPtr* older = nth_older(entry.older, newest, version);
      return older ? *older : nullptr;
    }
    const Rest& rest = *entry.rest;
    if (version == latest || version == rest.version) {
      if (entry.latest) {
        if (!rest.used.load(std::memory_order_relaxed)) rest.used.store(true, std::memory_order_relaxed);
        return entry.latest;
      }
      ArtifactPtr unpacked = detail::RecordPacker::unpack(rest.packed);
      lock.unlock();
      keep_parsed(shard, unpacked);
      return unpacked;
    }
    const std::string* older = nth_older(rest.older_packed, rest.version, version);
    return older ? detail::RecordPacker::unpack(*older) : nullptr;
  }

  void remove(const std::string& id, const std::string& tenant_id) {
    Shard& shard = shard_for(tenant_id);
    const std::string& key = composite_key(tenant_id, id);
    std::unique_lock lock(shard.mutex);
    const auto it = shard.entries.find(key);
    if (it == shard.entries.end()) throw not_found(detail::artifact_missing_message(id, tenant_id));
    const auto t = shard.tenants.find(tenant_id);
    t->second.erase(std::string_view(id));
    if (t->second.empty()) {
      shard.tenants.erase(t);
      drop_search(shard, tenant_id);
    } else if (!shard.search.empty()) {
      if (const auto ts = shard.search.find(tenant_id); ts != shard.search.end()) {
        TenantSearch& s = ts->second;
        s.stamp = ++shard.next_stamp;
        const Entry& e = it->second;
        // The index keeps no version's words: they are made again here, under the lock.
        if (s.words) s.words->remove(&e, [this, &e](std::uint64_t v) { return record_terms(*record_at(e, v)); });
        for (auto& index : s.vectors) index.second->remove_all(id);
      }
    }
    if (bounded_ && it->second.latest) shard.forget_parsed(it->second);
    shard.entries.erase(it);
  }

  [[nodiscard]] std::vector<std::uint64_t> versions(const std::string& id, const std::string& tenant_id) const {
    const Shard& shard = shard_for(tenant_id);
    const std::string& key = composite_key(tenant_id, id);
    std::shared_lock lock(shard.mutex);
    std::vector<std::uint64_t> out;
    const auto it = shard.entries.find(key);
    if (it == shard.entries.end()) return out;
    const std::uint64_t n = version_of(it->second);
    out.reserve(n);
    for (std::uint64_t v = 1; v <= n; ++v) out.push_back(v);
    return out;
  }

  [[nodiscard]] ListPage list(const std::string& tenant_id, const ListQuery& query = {}) const {
    detail::check_list_query(query);
    const Shard& shard = shard_for(tenant_id);
    std::shared_lock lock(shard.mutex);
    ListPage page;
    const auto t = shard.tenants.find(tenant_id);
    if (t == shard.tenants.end()) return page;
    const Index& index = t->second;
    auto it = query.cursor.empty() || query.cursor < query.prefix ? index.lower_bound(query.prefix)
                                                                  : index.upper_bound(query.cursor);
    // One allocation for the page rather than the vector's doublings; never more than the tenant holds.
    page.items.reserve(std::min(query.limit, index.size()));
    const bool filtered = query.type || query.created_by;
    const std::string_view prefix = query.prefix;
    for (; it != index.end() && (prefix.empty() || it->first.substr(0, prefix.size()) == prefix); ++it) {
      const Entry& entry = *it->second;
      // A packed record is decoded for the page but not kept parsed: a listing would sweep the cache.
      ArtifactPtr current = entry.latest ? entry.latest : detail::RecordPacker::unpack(entry.rest->packed);
      if (filtered && !detail::matches_filters(*current, query)) continue;
      if (page.items.size() == query.limit) {
        page.next_cursor = page.items.back()->id();
        break;
      }
      page.items.push_back(std::move(current));
    }
    return page;
  }

  /// Searches through the tenant's indexes (docs/search.md): words through its postings, scored by BM25 from the
  /// statistics the index keeps (exactly the scores of the default scan); similarity through its vector index of the
  /// query's model (exact unless the query sets ef); hybrid fuses the two (exact hybrid with every vector's rank, from
  /// a scan of the tenant's vectors); filters are applied to the candidates. The query's text is embedded before any
  /// lock is taken. The tenant's first search by words makes its word index, its first similarity search its vector
  /// indexes (search_indexes()); a filters-only search (or exact hybrid, for the vectors) needs neither.
  [[nodiscard]] SearchPage search(const std::string& tenant_id, const SearchQuery& q) const {
    const detail::PreparedSearch p = (detail::check_tenant(tenant_id), detail::prepare_search(embedder_, true, q));
    const Shard& shard = shard_for(tenant_id);
    const bool need_words = p.by_text, need_vectors = p.by_vector && !(p.by_text && q.exact);
    std::shared_lock lock(shard.mutex);
    std::vector<detail::SearchCandidate> found;
    auto ids = shard.tenants.find(tenant_id);
    auto ts_it = shard.search.find(tenant_id);
    // Made here when missing, then looked up again: a write may land between the making and this lock.
    while (ids != shard.tenants.end() && (need_words || need_vectors) &&
           (ts_it == shard.search.end() || (need_words && !ts_it->second.words) ||
            (need_vectors && !ts_it->second.vectors_built))) {
      lock.unlock();
      make_indexes(shard, tenant_id, need_words, need_vectors);
      lock.lock();
      ids = shard.tenants.find(tenant_id);
      ts_it = shard.search.find(tenant_id);
    }
    if (ids == shard.tenants.end()) return detail::rank_search_page(std::move(found), q, p);
    const TenantSearch* ts = ts_it == shard.search.end() ? nullptr : &ts_it->second;
    // The version, when it is one the query searches and it passes the filters.
    const auto searched = [this, &q](const Entry& e, std::uint64_t version) -> ArtifactPtr {
      if (!q.all_versions && version != version_of(e)) return nullptr;
      ArtifactPtr r = record_at(e, version);
      return r && detail::matches_filter(*r, q.filter) ? r : nullptr;
    };
    bool fields_later = false;  // word matches scored from the postings: their fields are found for the page alone
    std::unordered_map<std::string, std::size_t> slot;  // "id\0version" -> its place in found
    const auto candidate = [&found, &slot](const ArtifactPtr& r) -> detail::SearchCandidate& {
      const auto it = slot.try_emplace(r->id() + '\0' + std::to_string(r->version()), found.size()).first;
      if (it->second == found.size()) found.push_back({r, std::nullopt, std::nullopt, {}});
      return found[it->second];
    };
    const auto kept_vector = [](const Entry& e, std::uint64_t version) -> const Embedding* {
      for (const auto& v : e.vectors) {
        if (v.first == version) return &v.second;
      }
      return nullptr;
    };
    const auto compare = [&p](detail::SearchCandidate& c, const Embedding& e) {
      c.similarity = detail::cosine(p.vector->values, e.values);
      c.matched.similarity = c.similarity;
    };

    if (p.by_text && ts && ts->words) {
      const WordIndex& wi = *ts->words;
      const std::vector<std::string> words = p.words.words();
      std::vector<std::size_t> df;
      for (const auto& w : words) {
        const auto it = wi.postings.find(w);
        df.push_back(it == wi.postings.end() ? 0 : q.all_versions ? it->second.docs.size() : it->second.latest);
      }
      const detail::Bm25 bm25(words, q.all_versions ? wi.documents : wi.latest_documents,
                              q.all_versions ? wi.length : wi.latest_length, std::move(df));
      // Single words: scored from the postings' counts, no record tokenized; the page's hits learn their fields
      // after the ranking (below).
      std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>> counted;
      if (wi.counted_matches(p.words, words, counted)) {
        fields_later = true;
        for (const auto& doc_counts : counted) {
          const std::vector<std::uint8_t>& tf = doc_counts.second;
          const WordIndex::Doc& d = wi.docs.at(doc_counts.first);
          if (!q.all_versions && !d.latest) continue;
          const ArtifactPtr r = searched(*d.entry, d.version);
          if (!r) continue;
          detail::SearchCandidate& c = candidate(r);
          if (std::find(tf.begin(), tf.end(), std::uint8_t{255}) != tf.end()) {  // 255 or more: counted again
            const detail::RecordWords rw = detail::record_words(*r);
            c.bm25 = bm25.score(rw);
          } else {
            c.bm25 = bm25.score_of([&tf](std::size_t i) { return tf[i]; }, d.length);
          }
          for (std::size_t i = 0; i < words.size(); ++i) {
            if (tf[i]) c.matched.words.push_back(words[i]);
          }
        }
      } else {
        for (const std::uint64_t n : wi.word_candidates(p.words)) {
          const WordIndex::Doc& d = wi.docs.at(static_cast<std::uint32_t>(n));  // doc numbers are 32-bit
          if (!q.all_versions && !d.latest) continue;
          const ArtifactPtr r = searched(*d.entry, d.version);
          if (!r) continue;
          const detail::RecordWords rw = detail::record_words(*r);
          if (!detail::matches_words(rw, p.words)) continue;  // phrases and exclusions
          detail::SearchCandidate& c = candidate(r);
          c.bm25 = bm25.score(rw);
          detail::describe_word_match(rw, words, c.matched);
        }
      }
    }

    std::size_t vector_ranked_before = 0;  // similarity pages: versions ranked before the cursor (rank_search_page)
    if (p.by_vector && p.by_text && q.exact) {  // exact hybrid fuses with every vector's rank
      const std::string& prefix = q.filter.id_prefix;
      for (auto it = ids->second.lower_bound(prefix);
           it != ids->second.end() && it->first.substr(0, prefix.size()) == prefix; ++it) {
        for (const auto& [version, e] : it->second->vectors) {
          if (e.model != p.vector->model || e.values.size() != p.vector->values.size()) continue;
          if (const ArtifactPtr r = searched(*it->second, version)) compare(candidate(r), e);
        }
      }
    } else if (p.by_vector && ts && ts->vectors_built) {
      const auto index = ts->vectors.find({p.vector->model, p.vector->values.size()});
      if (index != ts->vectors.end()) {
        // Similarity alone pages by the cursor in the index's filter; hybrid fuses 4 x limit candidates.
        const bool paged = p.cursor && !p.by_text;
        // What accept() found for each version it let through, in that order (VectorHit::accepted): the record and
        // its kept vector are looked up once.
        std::vector<std::pair<ArtifactPtr, const Embedding*>> accepted;
        // The versions that pass the filters but rank before the cursor: their count is the rank of the page's first
        // hit less one. The scan asks about every one of them (each ranks above the page's hits, so its bound does
        // too); a search through the graph that falls back to the scan asks twice, hence a set.
        std::set<std::pair<const void*, std::uint64_t>> before_cursor;
        const auto accept = [&](const std::string& /*id*/, std::uint64_t version, const void* tag) {
          const Entry* e = static_cast<const Entry*>(tag);  // the version's entry (put() tags each vector with it)
          ArtifactPtr r = e ? searched(*e, version) : nullptr;
          const Embedding* kept = r ? kept_vector(*e, version) : nullptr;
          if (!kept) return false;
          if (paged && !detail::after_cursor(*p.cursor, detail::cosine(p.vector->values, kept->values), *r)) {
            before_cursor.emplace(tag, version);
            return false;
          }
          accepted.emplace_back(std::move(r), kept);
          return true;
        };
        const std::size_t k = p.by_text ? 4 * q.limit : q.limit + 1;
        // Similarity alone ranks by the exact cosine: versions near the k-th come too (detail::VectorIndex::near_tie).
        const double near = p.by_text ? 0 : detail::VectorIndex::near_tie;
        const std::vector<detail::VectorHit> hits = index->second->search_tagged(
            p.vector->values, k, accept, near, q.ef, false, detail::filter_bounds(q.filter));
        for (const auto& hit : hits) {
          auto& [r, kept] = accepted.at(hit.accepted);
          detail::SearchCandidate* c = nullptr;
          if (p.by_text) {
            c = &candidate(r);
          } else {  // nothing else was found: no merging
            c = &found.emplace_back(detail::SearchCandidate{std::move(r), std::nullopt, std::nullopt, {}});
          }
          if (hit.exact) {  // detail::cosine of the kept vector, from the index's copy (VectorHit::exact)
            c->similarity = hit.exact;
            c->matched.similarity = hit.exact;
          } else {
            compare(*c, *kept);
          }
        }
        vector_ranked_before = before_cursor.size();
      }
    }

    if (!p.by_text && !p.by_vector) {  // filters alone: id order, from the cursor on, limit + 1 of them
      const std::string& prefix = q.filter.id_prefix;
      const std::string& from = p.cursor && p.cursor->id > prefix ? p.cursor->id : prefix;
      for (auto it = ids->second.lower_bound(from);
           it != ids->second.end() && found.size() <= q.limit && it->first.substr(0, prefix.size()) == prefix; ++it) {
        const Entry& e = *it->second;
        for (std::uint64_t v = version_of(e); v >= 1 && found.size() <= q.limit; --v) {
          ArtifactPtr r = searched(e, v);
          if (r && (!p.cursor || detail::after_cursor(*p.cursor, 0, *r))) {
            found.push_back({std::move(r), std::nullopt, std::nullopt, {}});
          }
          if (!q.all_versions) break;
        }
      }
    }
    // unindexed: 0, everything is indexed as stored
    SearchPage page = detail::rank_search_page(std::move(found), q, p, vector_ranked_before);
    if (!fields_later) return page;
    const std::vector<std::string> words = p.words.words();
    for (auto& hit : page.hits) {  // the fields the page's word matches were found in (detail::describe_word_match)
      if (hit.matched.words.empty()) continue;
      SearchMatch m;
      detail::describe_word_match(detail::record_words(*hit.record), words, m);
      hit.matched.fields = std::move(m.fields);
    }
    return page;
  }

  /// Has nothing to do: a search finds every version (a tenant's indexes are made by its first search and kept
  /// current by every write after it; SearchPage::unindexed is always 0). Returns 0.
  std::size_t reindex(const std::string& tenant_id) {
    detail::check_tenant(tenant_id);
    return 0;
  }

  /// The search structures a tenant holds: its word index (made by its first search by words) and its vector
  /// indexes (made by its first similarity search). Both false for a tenant never searched so, and
  /// again once it holds no artifact.
  [[nodiscard]] SearchIndexes search_indexes(const std::string& tenant_id) const {
    const Shard& shard = shard_for(tenant_id);
    std::shared_lock lock(shard.mutex);
    const auto it = shard.search.find(tenant_id);
    if (it == shard.search.end()) return {};
    return {it->second.words != nullptr, it->second.vectors_built};
  }
  /// The tenants that hold a search structure (search_indexes()), in order.
  [[nodiscard]] std::vector<std::string> searched_tenants() const {
    std::vector<std::string> out;
    for (const Shard& shard : shards_) {
      std::shared_lock lock(shard.mutex);
      for (const auto& [tenant, ts] : shard.search) {
        if (ts.words || ts.vectors_built) out.push_back(tenant);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  struct Entry;
  using RecordTerms = detail::RecordTerms;
  using WordIndex = detail::WordIndex<Entry>;
  static RecordTerms record_terms(const ArtifactRecord& record) { return detail::record_terms(record); }

  // A vector index (detail::VectorIndex: exact scan; an hnswlib graph for queries with ef) per (model, dimension).
  using VectorIndexes = std::map<std::pair<std::string, std::size_t>, std::unique_ptr<detail::VectorIndex>>;

  // A tenant's search structures, under its shard's lock. Each index is made by the tenant's first search that
  // needs it (make_indexes) and kept current by every write after; `stamp` changes with every write to the tenant,
  // so that an index made outside the lock is kept only if no write landed while it was made.
  struct TenantSearch {
    std::unique_ptr<WordIndex> words;
    bool vectors_built = false;
    VectorIndexes vectors;
    std::uint64_t stamp = 0;
  };

  // A version of an entry (null when it has no such version), decoded when it is kept packed; a search's reads do
  // not change what the store keeps parsed.
  ArtifactPtr record_at(const Entry& entry, std::uint64_t version) const {
    if (!bounded_) {
      const std::uint64_t newest = entry.latest->version();
      if (version == newest) return entry.latest;
      const ArtifactPtr* older = nth_older(entry.older, newest, version);
      return older ? *older : nullptr;
    }
    const Rest& rest = *entry.rest;
    if (version == rest.version) return entry.latest ? entry.latest : detail::RecordPacker::unpack(rest.packed);
    const std::string* older = nth_older(rest.older_packed, rest.version, version);
    return older ? detail::RecordPacker::unpack(*older) : nullptr;
  }

  struct Shard;
  // store() and store_if(): with `expected` set, the id's latest version must be *expected (0: none), checked under
  // the shard's write lock together with the write.
  // The record's vector, made before any lock is taken (the embedder may be slow).
  std::optional<Embedding> embed(const ArtifactRecord& record) const {
    if (!embedder_) return std::nullopt;
    return std::move(detail::embed_checked(*embedder_, {embedder_->text_of(record)}).front());
  }

  ArtifactPtr put(const ArtifactRecord& record, const std::uint64_t* expected, std::optional<Embedding> vector) {
    const std::string& tenant_id = record.tenant_id();
    Shard& shard = shard_for(tenant_id);
    // The record's own id is referred to, not copied (the stored record shares it); only a new one is made.
    std::string generated = record.id().empty() ? detail::new_uuid(ids_.get()) : std::string();
    const std::string& id = generated.empty() ? record.id() : generated;
    // Estimated outside the lock: it walks the whole value.
    const std::size_t cost = bounded_ ? detail::json_heap_estimate(record.value()) : 0;
    // The words for the tenant's word index, also outside the lock, when it has one.
    const IndexedWords words = indexed_words(shard, tenant_id, id, record);
    std::unique_lock lock(shard.mutex);
    if (expected) {
      const auto found = shard.entries.find(composite_key(tenant_id, id));
      const std::uint64_t actual = found == shard.entries.end() ? 0 : version_of(found->second);
      if (actual != *expected) throw detail::version_conflict(record, *expected, actual);
    }
    auto [it, inserted] = shard.entries.try_emplace(composite_key(tenant_id, id));
    Entry& entry = it->second;
    TenantSearch* search = nullptr;
    if (!shard.search.empty()) {
      if (const auto ts = shard.search.find(tenant_id); ts != shard.search.end()) search = &ts->second;
    }
    // The words of the version this one replaces as the latest, made here when a write to the tenant (or its first
    // search) landed since indexed_words().
    std::optional<RecordTerms> replaced_now;
    const RecordTerms* replaced = nullptr;
    if (search && search->words && !inserted) {
      replaced = words.replaced && words.stamp == search->stamp
                     ? &*words.replaced
                     : &replaced_now.emplace(record_terms(*record_at(entry, version_of(entry))));
    }
    ArtifactPtr stored;
    try {
      // What can throw (a generated id or the clock's time the record refuses, the host's clock or id generator,
      // memory) comes before the new id is visible: a failed store leaves nothing behind.
      // The vector's place is made first, so that keeping the vector below cannot throw.
      if (vector) entry.vectors.reserve(entry.vectors.size() + 1);
      const std::uint64_t version = inserted ? 1 : version_of(entry) + 1;
      stored = generated.empty() ? detail::stamp(record, version, clock_.get())
                                 : detail::stamp(record, std::move(generated), version, clock_.get());
      if (inserted) shard.tenants[tenant_id].emplace(id_part(it->first, tenant_id), &entry);
      // The version being replaced joins the older ones: packed, when the store bounds its parsed values. Each
      // branch's last step is the only one that can throw (the push; a push that throws changes nothing).
      if (bounded_ && !entry.rest) entry.rest = std::make_unique<Rest>();
      if (inserted) {
      } else if (!bounded_) {
        entry.older.push_front(std::move(entry.latest));
      } else if (!entry.latest || !entry.rest->packed.empty()) {
        entry.rest->older_packed.push_front(std::move(entry.rest->packed));
      } else {
        entry.rest->older_packed.push_front(detail::RecordPacker::pack(*entry.latest));
      }
    } catch (...) {
      if (inserted) shard.entries.erase(it);
      throw;
    }
    // Nothing below throws.
    if (bounded_) {
      Rest& rest = *entry.rest;
      if (entry.latest) shard.forget_parsed(entry);
      std::string().swap(rest.packed);
      rest.version = stored->version();
      entry.latest = stored;
      shard.keep_parsed(entry, cost);
      shard.make_room(shard_budget_);
    } else {
      entry.latest = stored;
    }
    // The tenant's indexes, when it has them, under the same lock: searchable as soon as store() returns.
    if (search) {
      search->stamp = ++shard.next_stamp;
      if (search->words && search->words->full()) drop_words(shard, *search);  // the next search makes it anew
      if (search->words) {
        // Not made above when the tenant's first search made its word index meanwhile: made here.
        search->words->add(&entry, stored->version(), words.words ? *words.words : record_terms(*stored), replaced);
      }
      if (search->vectors_built && vector && !vector->values.empty()) {
        auto& index = search->vectors[{vector->model, vector->values.size()}];
        if (!index) index = make_vector_index(vector->values.size());
        index->add(stored->id(), stored->version(), vector->values, &entry);  // an entry outlives its versions there
      }
    }
    if (vector) entry.vectors.emplace_back(stored->version(), std::move(*vector));
    return stored;
  }

  // A fetch decoded the packed latest version of an entry: keep it parsed, if it is still the latest and fits.
  void keep_parsed(const Shard& const_shard, const ArtifactPtr& record) const {
    const std::size_t cost = detail::json_heap_estimate(record->value());
    if (cost > shard_budget_) return;
    Shard& shard = const_cast<Shard&>(const_shard);
    std::unique_lock lock(shard.mutex);
    const auto it = shard.entries.find(composite_key(record->tenant_id(), record->id()));
    if (it == shard.entries.end()) return;
    Entry& entry = it->second;
    if (entry.latest || entry.rest->version != record->version()) return;
    entry.latest = record;
    shard.keep_parsed(entry, cost);
    shard.make_room(shard_budget_);
  }

  // What an entry of a bounded store needs besides: the older versions packed (newest first), the latest version
  // packed (when it was packed once: an entry decoded again keeps it, so that packing it once more costs nothing),
  // the latest version's number (`latest` may be null), the ring's neighbours, the estimated heap of the parsed
  // value, and whether a fetch used it since the sweep last passed.
  struct Rest {
    std::forward_list<std::string> older_packed;
    std::string packed;
    std::uint64_t version = 0;
    Entry* prev = nullptr;
    Entry* next = nullptr;
    std::size_t cost = 0;
    mutable std::atomic<bool> used{false};
  };
  // The versions of one artifact. The latest is kept apart so that the common fetch touches one object. The older
  // ones are a list, newest first: storing a version allocates one node, as a vector's growth would on average,
  // and an artifact with one version keeps no vector; fetching an old version walks back from the latest. In a
  // bounded store `latest` is null while the latest version is packed, and `older` stays empty.
  struct Entry {
    ArtifactPtr latest;
    std::forward_list<ArtifactPtr> older;
    std::unique_ptr<Rest> rest;  // bounded stores only
    // Each version's vector (stores with an embedder, or store_embedded()), oldest first: beside the record, so
    // that a similarity search finds it with the entry.
    std::vector<std::pair<std::uint64_t, Embedding>> vectors;
  };
  // Version `version` in `older` (newest first, below `newest`), or null.
  template <class T>
  static const T* nth_older(const std::forward_list<T>& older, std::uint64_t newest, std::uint64_t version) {
    if (version == 0 || version >= newest) return nullptr;
    auto it = older.begin();
    for (std::uint64_t v = newest - 1; v > version && it != older.end(); --v) ++it;
    return it == older.end() ? nullptr : &*it;
  }
  static std::uint64_t version_of(const Entry& e) noexcept { return e.latest ? e.latest->version() : e.rest->version; }
  // A tenant's ids in order, viewing the id part of the entries' keys (unordered_map nodes never move).
  using Index = std::map<std::string_view, const Entry*, std::less<>>;
  struct Shard {
    mutable std::shared_mutex mutex;
    std::unordered_map<std::string, Entry> entries;  // key: tenant_id + '\0' + id
    std::unordered_map<std::string, Index> tenants;
    // The search structures of the tenants searched since they last held no artifact; how many of them have a
    // word index (read without the lock by put(), which makes a record's words outside the lock only then); the
    // last TenantSearch::stamp given.
    std::unordered_map<std::string, TenantSearch> search;
    std::atomic<std::size_t> word_indexed{0};
    std::uint64_t next_stamp = 0;
    // Bounded stores: the parsed entries, a circular list whose `hand` is the next one the sweep looks at (new ones
    // go just behind it, so they are looked at last), and the estimated heap they keep. Under the write lock.
    Entry* hand = nullptr;
    std::size_t parsed_bytes = 0;

    void keep_parsed(Entry& e, std::size_t cost) noexcept {
      Rest& r = *e.rest;
      r.cost = cost;
      r.used.store(true, std::memory_order_relaxed);  // a newcomer survives one pass of the sweep
      parsed_bytes += cost;
      if (!hand) {
        r.prev = r.next = &e;
        hand = &e;
        return;
      }
      r.next = hand;
      r.prev = hand->rest->prev;
      r.prev->rest->next = &e;
      hand->rest->prev = &e;
    }
    // Takes `e` off the ring (its `latest` is about to be dropped or replaced by the caller).
    void forget_parsed(Entry& e) noexcept {
      Rest& r = *e.rest;
      parsed_bytes -= r.cost;
      if (r.next == &e) {
        hand = nullptr;
      } else {
        r.prev->rest->next = r.next;
        r.next->rest->prev = r.prev;
        if (hand == &e) hand = r.next;
      }
      r.prev = r.next = nullptr;
      r.cost = 0;
    }
    // Packs parsed entries, least recently used first, until the parsed ones fit `budget`. Packing allocates: when
    // it cannot, the shard stays over its budget until the next store (nothing is lost).
    void make_room(std::size_t budget) noexcept {
      while (parsed_bytes > budget && hand) {
        Entry& e = *hand;
        Rest& r = *e.rest;
        if (r.used.load(std::memory_order_relaxed)) {
          r.used.store(false, std::memory_order_relaxed);
          hand = r.next;
          continue;
        }
        if (r.packed.empty()) {
          try {
            r.packed = detail::RecordPacker::pack(*e.latest);
          } catch (...) {
            return;
          }
        }
        forget_parsed(e);
        e.latest.reset();
      }
    }
  };

  // What make_indexes reads from a tenant for its word index: every version (its record, or its packed form,
  // decoded outside the lock), in id order and oldest version first.
  struct TenantCopy {
    struct Version {
      const Entry* entry;
      ArtifactPtr record;
      std::string packed;
    };
    std::vector<Version> versions;
  };

  TenantCopy copy_tenant(const Index& index) const {
    TenantCopy c;
    for (const auto& [id, e] : index) {
      const std::uint64_t newest = version_of(*e);
      for (std::uint64_t v = 1; v <= newest; ++v) {
        TenantCopy::Version& out = c.versions.emplace_back();
        out.entry = e;
        if (!bounded_) {
          out.record = record_at(*e, v);
        } else if (v == newest && e->latest) {
          out.record = e->latest;
        } else if (v == newest) {
          out.packed = e->rest->packed;
        } else {
          out.packed = *nth_older(e->rest->older_packed, newest, v);
        }
      }
    }
    return c;
  }

  // The indexes of what copy_tenant read.
  static std::unique_ptr<WordIndex> make_word_index(const TenantCopy& c) {
    auto wi = std::make_unique<WordIndex>();
    RecordTerms before;  // the words of the version added last
    const Entry* last = nullptr;
    for (const auto& v : c.versions) {
      const ArtifactPtr r = v.record ? v.record : detail::RecordPacker::unpack(v.packed);
      RecordTerms words = record_terms(*r);
      wi->add(v.entry, r->version(), words, v.entry == last ? &before : nullptr);
      before = std::move(words);
      last = v.entry;
    }
    return wi;
  }
  // A vector index whose columns (detail::filter_bounds) are read from the records: each version's tag is its
  // entry, read under the shard's lock as every search and write of the index is.
  std::unique_ptr<detail::VectorIndex> make_vector_index(std::size_t dimension) const {
    auto index = std::make_unique<detail::VectorIndex>(dimension);
    index->set_column_reader(
        [this](const std::string& column, const std::string&, std::uint64_t version, const void* tag) {
          const ArtifactPtr r = tag ? record_at(*static_cast<const Entry*>(tag), version) : nullptr;
          return r ? detail::filter_column(column, *r) : detail::VectorIndex::ColumnValue{};
        });
    return index;
  }

  // The vector indexes of a tenant, made from its entries under the caller's lock (read straight into the indexes'
  // arrays: a copy of the vectors first would cost as much again). Each entry is its versions' tag, valid while no
  // write lands (TenantSearch::stamp).
  VectorIndexes make_vector_indexes(const Index& tenant) const {
    std::map<std::pair<std::string, std::size_t>, std::size_t> counts;
    for (const auto& [id, e] : tenant) {
      for (const auto& [version, embedding] : e->vectors) {
        if (!embedding.values.empty()) ++counts[{embedding.model, embedding.values.size()}];
      }
    }
    VectorIndexes out;
    for (const auto& [key, count] : counts) {
      auto& index = out[key];
      index = make_vector_index(key.second);
      index->reserve(count);
    }
    for (const auto& [id, e] : tenant) {
      for (const auto& [version, embedding] : e->vectors) {
        if (embedding.values.empty()) continue;
        out[{embedding.model, embedding.values.size()}]->add(std::string(id), version, embedding.values, e);
      }
    }
    return out;
  }

  // Makes the tenant's word index (`words`) and vector indexes (`vectors`) that it does not hold yet. They are made
  // from a copy of the tenant outside the shard's lock (readers and writers of the shard go on meanwhile) and kept
  // if no write to the tenant landed since the copy; after two such tries, under the write lock. Concurrent first
  // searches of one tenant each make them, and the first to finish is kept.
  void make_indexes(const Shard& const_shard, const std::string& tenant_id, bool words, bool vectors) const {
    Shard& shard = const_cast<Shard&>(const_shard);
    for (int attempt = 0;; ++attempt) {
      bool need_words = false, need_vectors = false;
      {
        std::unique_lock lock(shard.mutex);
        const auto t = shard.tenants.find(tenant_id);
        if (t == shard.tenants.end()) return;
        TenantSearch& ts = shard.search[tenant_id];
        if (ts.stamp == 0) ts.stamp = ++shard.next_stamp;
        need_words = words && !ts.words;
        need_vectors = vectors && !ts.vectors_built;
        if (!need_words && !need_vectors) return;
        if (attempt >= 2) {  // writes keep landing: made under the lock
          if (need_words) install_words(shard, ts, make_word_index(copy_tenant(t->second)));
          if (need_vectors) install_vectors(ts, make_vector_indexes(t->second));
          return;
        }
      }
      std::uint64_t stamp = 0;
      TenantCopy c;
      VectorIndexes vi;
      {
        std::shared_lock lock(shard.mutex);
        const auto t = shard.tenants.find(tenant_id);
        const auto ts = shard.search.find(tenant_id);
        if (t == shard.tenants.end() || ts == shard.search.end()) continue;
        stamp = ts->second.stamp;
        if (need_words) c = copy_tenant(t->second);
        if (need_vectors) vi = make_vector_indexes(t->second);
      }
      std::unique_ptr<WordIndex> wi = need_words ? make_word_index(c) : nullptr;
      std::unique_lock lock(shard.mutex);
      const auto ts = shard.search.find(tenant_id);
      if (ts == shard.search.end() || ts->second.stamp != stamp) continue;  // a write landed: again
      if (wi && !ts->second.words) install_words(shard, ts->second, std::move(wi));
      if (need_vectors && !ts->second.vectors_built) install_vectors(ts->second, std::move(vi));
      return;
    }
  }
  static void install_words(Shard& shard, TenantSearch& ts, std::unique_ptr<WordIndex> wi) noexcept {
    ts.words = std::move(wi);
    shard.word_indexed.fetch_add(1, std::memory_order_relaxed);
  }
  static void install_vectors(TenantSearch& ts, VectorIndexes vi) noexcept {
    ts.vectors = std::move(vi);
    ts.vectors_built = true;
  }
  static void drop_words(Shard& shard, TenantSearch& ts) noexcept {
    ts.words.reset();
    shard.word_indexed.fetch_sub(1, std::memory_order_relaxed);
  }
  // Drops a tenant's search structures (it holds no artifact any more).
  static void drop_search(Shard& shard, const std::string& tenant_id) noexcept {
    const auto it = shard.search.find(tenant_id);
    if (it == shard.search.end()) return;
    if (it->second.words) shard.word_indexed.fetch_sub(1, std::memory_order_relaxed);
    shard.search.erase(it);
  }
  // What put() gives the tenant's word index, made outside the lock when the tenant has one: the record's words,
  // and those of the id's latest version until now (the one it replaces), good while the tenant's stamp is `stamp`.
  struct IndexedWords {
    std::optional<RecordTerms> words, replaced;
    std::uint64_t stamp = 0;
  };
  IndexedWords indexed_words(const Shard& shard, const std::string& tenant_id, const std::string& id,
                             const ArtifactRecord& record) const {
    IndexedWords out;
    if (shard.word_indexed.load(std::memory_order_relaxed) == 0) return out;  // no tenant of the shard has one
    ArtifactPtr newest;
    std::string packed;
    {
      std::shared_lock lock(shard.mutex);
      const auto ts = shard.search.find(tenant_id);
      if (ts == shard.search.end() || !ts->second.words) return out;
      out.stamp = ts->second.stamp;
      if (const auto e = shard.entries.find(composite_key(tenant_id, id)); e != shard.entries.end()) {
        newest = e->second.latest;
        if (!newest) packed = e->second.rest->packed;
      }
    }
    out.words = record_terms(record);
    if (newest || !packed.empty()) {
      out.replaced = record_terms(newest ? *newest : *detail::RecordPacker::unpack(packed));
    }
    return out;
  }

  // The lookup key, built in a per-thread buffer so that a fetch allocates nothing. A tenant id cannot contain
  // '\0' (records reject control characters), so the key is unambiguous.
  static const std::string& composite_key(const std::string& tenant_id, const std::string& id) {
    thread_local std::string key;
    key.assign(tenant_id).push_back('\0');
    key.append(id);
    return key;
  }
  static std::string_view id_part(const std::string& key, const std::string& tenant_id) {
    return std::string_view(key).substr(tenant_id.size() + 1);
  }

  Shard& shard_for(const std::string& tenant_id) {
    detail::check_tenant(tenant_id);
    return shards_[std::hash<std::string>{}(tenant_id) % shards_.size()];
  }
  const Shard& shard_for(const std::string& tenant_id) const { return const_cast<Impl*>(this)->shard_for(tenant_id); }

  std::vector<Shard> shards_;
  std::shared_ptr<Clock> clock_;
  std::shared_ptr<IdGenerator> ids_;
  bool bounded_ = false;          // max_parsed_bytes was set
  std::size_t shard_budget_ = 0;  // max_parsed_bytes / shards
  std::shared_ptr<Embedder> embedder_;
};

CAIRN_INLINE InMemoryArtifactStore::InMemoryArtifactStore(std::size_t shards) : impl_(std::make_unique<Impl>(shards)) {}
CAIRN_INLINE InMemoryArtifactStore::InMemoryArtifactStore(InMemoryStoreOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
CAIRN_INLINE InMemoryArtifactStore::~InMemoryArtifactStore() = default;

CAIRN_INLINE ArtifactPtr InMemoryArtifactStore::store(const ArtifactRecord& record) { return impl_->store(record); }
CAIRN_INLINE ArtifactPtr InMemoryArtifactStore::store_if(const ArtifactRecord& record, std::uint64_t expected_version) {
  return impl_->store_if(record, expected_version);
}
CAIRN_INLINE ArtifactPtr InMemoryArtifactStore::store_embedded(const ArtifactRecord& record,
                                                               const Embedding& embedding) {
  return impl_->store_embedded(record, embedding);
}
CAIRN_INLINE std::optional<Embedding> InMemoryArtifactStore::embedding(const std::string& id,
                                                                       const std::string& tenant_id,
                                                                       std::uint64_t version) const {
  return impl_->embedding(id, tenant_id, version);
}
CAIRN_INLINE std::shared_ptr<Embedder> InMemoryArtifactStore::embedder() const { return impl_->embedder(); }
CAIRN_INLINE ArtifactPtr InMemoryArtifactStore::fetch(const std::string& id, const std::string& tenant_id,
                                                      std::uint64_t version) const {
  return impl_->fetch(id, tenant_id, version);
}
CAIRN_INLINE void InMemoryArtifactStore::remove(const std::string& id, const std::string& tenant_id) {
  impl_->remove(id, tenant_id);
}
CAIRN_INLINE std::vector<std::uint64_t> InMemoryArtifactStore::versions(const std::string& id,
                                                                        const std::string& tenant_id) const {
  return impl_->versions(id, tenant_id);
}
CAIRN_INLINE ListPage InMemoryArtifactStore::list(const std::string& tenant_id, const ListQuery& query) const {
  return impl_->list(tenant_id, query);
}
CAIRN_INLINE SearchPage InMemoryArtifactStore::search(const std::string& tenant_id, const SearchQuery& q) const {
  return impl_->search(tenant_id, q);
}
CAIRN_INLINE std::size_t InMemoryArtifactStore::reindex(const std::string& tenant_id) {
  return impl_->reindex(tenant_id);
}
CAIRN_INLINE InMemoryArtifactStore::SearchIndexes InMemoryArtifactStore::search_indexes(
    const std::string& tenant_id) const {
  return impl_->search_indexes(tenant_id);
}
CAIRN_INLINE std::vector<std::string> InMemoryArtifactStore::searched_tenants() const {
  return impl_->searched_tenants();
}

CAIRN_END_NAMESPACE
