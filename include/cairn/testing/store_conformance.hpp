// cairn::testing — the behaviour every ArtifactStore must show, as checks any test framework can run.
//
// A backend author proves their store behaves like the built-in ones with a few lines:
//
//     for (const auto& check : cairn::testing::store_conformance_checks()) {
//       auto store = make_my_store();          // a fresh (or shared) store for each check
//       check.run(*store);                     // throws cairn::testing::conformance_failure on a violation
//     }
//
// The search checks live in cairn/testing/search_conformance.hpp; this suite runs them after its own.
// Checks use tenants with random names, so they also run against a durable store that already holds data.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/detail/random.hpp"
#include "cairn/error.hpp"
#include "cairn/testing/conformance_check.hpp"
#include "cairn/testing/search_conformance.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

#define CAIRN_CONFORM(cond) ::cairn::testing::detail::expect(static_cast<bool>(cond), #cond, __LINE__)
#define CAIRN_CONFORM_THROWS(E, expr) ::cairn::testing::detail::expect_throw<E>([&] { (void)(expr); }, #expr, __LINE__)

namespace detail {

inline std::vector<std::string> ids_of(const ListPage& page) {
  std::vector<std::string> ids;
  for (const auto& r : page.items) ids.push_back(r->id());
  return ids;
}

inline bool is_uuid_v4(const std::string& s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (s[i] == '-')) return false;
    if (!dash && !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  }
  return s[14] == '4' && (s[19] == '8' || s[19] == '9' || s[19] == 'a' || s[19] == 'b');
}

}  // namespace detail

/// Every check of the suite, in a fixed order.
[[nodiscard]] inline std::vector<ConformanceCheck> store_conformance_checks() {
  using detail::fresh_tenant;
  using detail::note;
  using nlohmann::json;
  std::vector<ConformanceCheck> checks;

  checks.push_back({"store assigns a UUID v4 id, version 1 and created_at", [](ArtifactStore& s) {
                      const auto t = fresh_tenant("assign");
                      const auto before = cairn::detail::now_ms();
                      auto stored = s.store(*note(t, "", "hello").build());
                      CAIRN_CONFORM(stored != nullptr);
                      CAIRN_CONFORM(detail::is_uuid_v4(stored->id()));
                      CAIRN_CONFORM(stored->version() == 1);
                      CAIRN_CONFORM(stored->created_at() >= before - 1000 &&
                                    stored->created_at() <= cairn::detail::now_ms() + 1000);
                      CAIRN_CONFORM(stored->value() == "hello");
                      CAIRN_CONFORM(stored->tenant_id() == t);
                      auto other = s.store(*note(t, "", "hello").build());
                      CAIRN_CONFORM(other->id() != stored->id());
                    }});

  checks.push_back({"a stored record comes back field for field", [](ArtifactStore& s) {
                      const auto t = fresh_tenant("fields");
                      const json value = {{"text", "Grüße, 世界"},
                                          {"n", 42},
                                          {"big", 9007199254740993ULL},
                                          {"neg", -7},
                                          {"pi", 3.25},
                                          {"list", {1, "two", nullptr, true}},
                                          {"nested", {{"a", {{"b", {}}}}}}};
                      auto rec = ArtifactRecord::builder()
                                     .tenant_id(t)
                                     .id("full")
                                     .type("dataset")
                                     .title("Full record")
                                     .description("every field set")
                                     .purpose("conformance")
                                     .value(value)
                                     .storage_url("s3://bucket/full.json")
                                     .mime_type("application/json")
                                     .size_bytes(1234)
                                     .schema_url("https://example.com/schema.json")
                                     .created_by("agent-7")
                                     .created_at(1700000000123)
                                     .metadata({{"tool_name", "collect"}, {"success", true}})
                                     .build();
                      auto stored = s.store(*rec);
                      auto fetched = s.fetch("full", t);
                      CAIRN_CONFORM(fetched != nullptr);
                      CAIRN_CONFORM(*fetched == *stored);
                      CAIRN_CONFORM(fetched->value() == value);
                      CAIRN_CONFORM(fetched->created_at() == 1700000000123);
                      CAIRN_CONFORM(fetched->metadata() == json({{"tool_name", "collect"}, {"success", true}}));
                      CAIRN_CONFORM(fetched->storage_url() == std::optional<std::string>("s3://bucket/full.json"));
                      CAIRN_CONFORM(fetched->size_bytes() == std::optional<std::uint64_t>(1234));
                      CAIRN_CONFORM(fetched->created_by() == std::optional<std::string>("agent-7"));
                      CAIRN_CONFORM(fetched->type() == "dataset");
                    }});

  checks.push_back({"a record with only a storage_url round-trips", [](ArtifactStore& s) {
                      const auto t = fresh_tenant("url");
                      (void)s.store(*ArtifactRecord::builder()
                                         .tenant_id(t)
                                         .id("u")
                                         .type("image")
                                         .title("chart")
                                         .storage_url("file:///tmp/chart.png")
                                         .mime_type("image/png")
                                         .build());
                      auto f = s.fetch("u", t);
                      CAIRN_CONFORM(f != nullptr);
                      CAIRN_CONFORM(!f->has_value());
                      CAIRN_CONFORM(f->storage_url() == std::optional<std::string>("file:///tmp/chart.png"));
                    }});

  checks.push_back({"storing an existing id adds consecutive versions; fetch returns the latest", [](ArtifactStore& s) {
                      const auto t = fresh_tenant("versions");
                      auto v1 = s.store(*note(t, "doc", "draft 1").build());
                      auto v2 = s.store(*v1->revise().value("draft 2").build());
                      auto v3 =
                          s.store(*note(t, "doc", "draft 3").version(99).build());  // a caller's version is ignored
                      CAIRN_CONFORM(v1->version() == 1);
                      CAIRN_CONFORM(v2->version() == 2);
                      CAIRN_CONFORM(v3->version() == 3);
                      CAIRN_CONFORM(s.fetch("doc", t)->value() == "draft 3");
                      CAIRN_CONFORM(s.fetch("doc", t, 1)->value() == "draft 1");
                      CAIRN_CONFORM(s.fetch("doc", t, 2)->value() == "draft 2");
                      CAIRN_CONFORM(s.fetch("doc", t, 3)->version() == 3);
                      CAIRN_CONFORM(s.fetch("doc", t, 4) == nullptr);
                      CAIRN_CONFORM((s.versions("doc", t) == std::vector<std::uint64_t>{1, 2, 3}));
                    }});

  checks.push_back({"missing ids: fetch is null, versions empty, remove throws not_found", [](ArtifactStore& s) {
                      const auto t = fresh_tenant("missing");
                      CAIRN_CONFORM(s.fetch("nope", t) == nullptr);
                      CAIRN_CONFORM(s.fetch("nope", t, 1) == nullptr);
                      CAIRN_CONFORM(s.fetch("", t) == nullptr);
                      CAIRN_CONFORM(s.versions("nope", t).empty());
                      const auto msg = CAIRN_CONFORM_THROWS(not_found, s.remove("nope", t));
                      CAIRN_CONFORM(msg.find("nope") != std::string::npos);
                    }});

  checks.push_back({"another tenant's artifact is indistinguishable from a missing one", [](ArtifactStore& s) {
                      const auto a = fresh_tenant("a");
                      const auto b = fresh_tenant("b");
                      (void)s.store(*note(b, "secret", "b's data").build());
                      CAIRN_CONFORM(s.fetch("secret", a) == nullptr);
                      CAIRN_CONFORM(s.fetch("secret", a, 1) == nullptr);
                      CAIRN_CONFORM(s.versions("secret", a).empty());
                      CAIRN_CONFORM(s.list(a).items.empty());
                      CAIRN_CONFORM(s.list(a, ListQuery{"sec", std::nullopt, std::nullopt, 10, ""}).items.empty());
                      const auto foreign = CAIRN_CONFORM_THROWS(not_found, s.remove("secret", a));
                      CAIRN_CONFORM(s.fetch("secret", b) != nullptr);  // a's failed remove touched nothing
                      s.remove("secret", b);
                      const auto missing = CAIRN_CONFORM_THROWS(not_found, s.remove("secret", a));
                      CAIRN_CONFORM(foreign == missing);
                    }});

  checks.push_back({"the same id in two tenants is two artifacts", [](ArtifactStore& s) {
                      const auto a = fresh_tenant("a");
                      const auto b = fresh_tenant("b");
                      (void)s.store(*note(a, "plan", "a1").build());
                      (void)s.store(*note(a, "plan", "a2").build());
                      auto bv = s.store(*note(b, "plan", "b1").build());
                      CAIRN_CONFORM(bv->version() == 1);
                      CAIRN_CONFORM(s.fetch("plan", a)->value() == "a2");
                      CAIRN_CONFORM(s.fetch("plan", b)->value() == "b1");
                      s.remove("plan", a);
                      CAIRN_CONFORM(s.fetch("plan", a) == nullptr);
                      CAIRN_CONFORM(s.fetch("plan", b)->value() == "b1");
                    }});

  checks.push_back({"remove drops every version; a new store starts at version 1", [](ArtifactStore& s) {
                      const auto t = fresh_tenant("remove");
                      (void)s.store(*note(t, "x", 1).build());
                      (void)s.store(*note(t, "x", 2).build());
                      (void)s.store(*note(t, "keep", 3).build());
                      s.remove("x", t);
                      CAIRN_CONFORM(s.fetch("x", t) == nullptr);
                      CAIRN_CONFORM(s.fetch("x", t, 1) == nullptr);
                      CAIRN_CONFORM(s.versions("x", t).empty());
                      CAIRN_CONFORM((detail::ids_of(s.list(t)) == std::vector<std::string>{"keep"}));
                      CAIRN_CONFORM_THROWS(not_found, s.remove("x", t));
                      CAIRN_CONFORM(s.store(*note(t, "x", 4).build())->version() == 1);
                    }});

  checks.push_back(
      {"list: id order, latest versions, filters, limit and cursor", [](ArtifactStore& s) {
         const auto t = fresh_tenant("list");
         const auto other = fresh_tenant("other");
         for (const char* id : {"b-2", "a-1", "c-3", "a-2", "b-1"}) (void)s.store(*note(t, id, id).build());
         (void)s.store(*note(t, "a-1", "a-1 v2").type("code").created_by("coder").build());
         (void)s.store(*note(other, "a-0", "other tenant").build());

         auto all = s.list(t);
         CAIRN_CONFORM((detail::ids_of(all) == std::vector<std::string>{"a-1", "a-2", "b-1", "b-2", "c-3"}));
         CAIRN_CONFORM(!all.next_cursor);
         CAIRN_CONFORM(all.items[0]->version() == 2);
         CAIRN_CONFORM(all.items[0]->value() == "a-1 v2");

         CAIRN_CONFORM(
             (detail::ids_of(s.list(t, ListQuery{"a-", {}, {}, 100, ""})) == std::vector<std::string>{"a-1", "a-2"}));
         CAIRN_CONFORM((detail::ids_of(s.list(t, ListQuery{"", ArtifactType::code, {}, 100, ""})) ==
                        std::vector<std::string>{"a-1"}));
         CAIRN_CONFORM((detail::ids_of(s.list(t, ListQuery{"", {}, std::string("coder"), 100, ""})) ==
                        std::vector<std::string>{"a-1"}));
         CAIRN_CONFORM(s.list(t, ListQuery{"z", {}, {}, 100, ""}).items.empty());

         // Pages of two cover every id exactly once, in order.
         std::vector<std::string> seen;
         ListQuery q;
         q.limit = 2;
         int pages = 0;
         for (;;) {
           auto page = s.list(t, q);
           ++pages;
           for (const auto& id : detail::ids_of(page)) seen.push_back(id);
           CAIRN_CONFORM(page.items.size() <= 2);
           if (!page.next_cursor) break;
           q.cursor = *page.next_cursor;
           CAIRN_CONFORM(pages < 10);
         }
         CAIRN_CONFORM(pages == 3);
         CAIRN_CONFORM((seen == std::vector<std::string>{"a-1", "a-2", "b-1", "b-2", "c-3"}));

         // A full last page says there is no more.
         auto exact = s.list(t, ListQuery{"b-", {}, {}, 2, ""});
         CAIRN_CONFORM(exact.items.size() == 2);
         CAIRN_CONFORM(!exact.next_cursor);

         // Prefix and cursor together.
         auto tail = s.list(t, ListQuery{"a-", {}, {}, 1, ""});
         CAIRN_CONFORM(tail.next_cursor.has_value());
         auto rest = s.list(t, ListQuery{"a-", {}, {}, 5, *tail.next_cursor});
         CAIRN_CONFORM((detail::ids_of(rest) == std::vector<std::string>{"a-2"}));

         ListQuery zero;
         zero.limit = 0;
         CAIRN_CONFORM_THROWS(invalid_argument, s.list(t, zero));
         ListQuery huge;
         huge.limit = ListQuery::max_limit + 1;
         CAIRN_CONFORM_THROWS(invalid_argument, s.list(t, huge));
       }});

  checks.push_back({"an empty tenant is rejected by every call", [](ArtifactStore& s) {
                      CAIRN_CONFORM_THROWS(invalid_argument, s.fetch("x", ""));
                      CAIRN_CONFORM_THROWS(invalid_argument, s.remove("x", ""));
                      CAIRN_CONFORM_THROWS(invalid_argument, s.versions("x", ""));
                      CAIRN_CONFORM_THROWS(invalid_argument, s.list(""));
                      CAIRN_CONFORM_THROWS(invalid_argument, s.store(ArtifactPtr{}));
                    }});

  checks.push_back({"large values round-trip unchanged", [](ArtifactStore& s) {
                      const auto t = fresh_tenant("large");
                      std::string big(1 << 20, 'x');
                      for (std::size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>('a' + i % 26);
                      json arr = json::array();
                      for (int i = 0; i < 5000; ++i) arr.push_back({{"i", i}, {"s", std::to_string(i)}});
                      (void)s.store(*note(t, "big", big).build());
                      (void)s.store(*note(t, "arr", arr).build());
                      CAIRN_CONFORM(s.fetch("big", t)->value() == big);
                      CAIRN_CONFORM(s.fetch("arr", t)->value() == arr);
                    }});

  checks.push_back(
      {"ids with unusual characters are stored as given", [](ArtifactStore& s) {
         const auto t = fresh_tenant("ids");
         for (const std::string id : {"reports/2024/q3.md", "ünïcødé-id", "with space", "quote'\"id", "%_like_*"}) {
           (void)s.store(*note(t, id, id).build());
           CAIRN_CONFORM(s.fetch(id, t) != nullptr);
           CAIRN_CONFORM(s.fetch(id, t)->value() == id);
         }
         CAIRN_CONFORM(s.fetch("%", t) == nullptr);
         CAIRN_CONFORM(s.list(t, ListQuery{"%_", {}, {}, 10, ""}).items.size() == 1);
       }});

  checks.push_back(
      {"non-finite numbers never reach a store; finite extremes round-trip exactly", [](ArtifactStore& s) {
         // JSON has no NaN or Infinity: the builder refuses them, so no backend has to choose what to keep.
         const auto t = fresh_tenant("finite");
         CAIRN_CONFORM_THROWS(invalid_artifact, note(t, "nan", std::numeric_limits<double>::quiet_NaN()).build());
         CAIRN_CONFORM_THROWS(invalid_artifact,
                              note(t, "inf", json{{"a", -std::numeric_limits<double>::infinity()}}).build());
         CAIRN_CONFORM_THROWS(invalid_artifact,
                              note(t, "meta", 1).metadata("x", std::numeric_limits<double>::infinity()).build());
         const json extremes = {std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                                std::numeric_limits<double>::denorm_min(), 0.1, 1e300};
         (void)s.store(*note(t, "extremes", extremes).metadata("m", 2.5).build());
         const auto back = s.fetch("extremes", t);
         CAIRN_CONFORM(back != nullptr);
         CAIRN_CONFORM(back->value() == extremes);
         CAIRN_CONFORM(back->metadata() == json({{"m", 2.5}}));
         CAIRN_CONFORM(detail::ids_of(s.list(t)) == std::vector<std::string>{"extremes"});
       }});

  checks.push_back({"invalid UTF-8 never reaches a store; every valid code point round-trips", [](ArtifactStore& s) {
                      const auto t = fresh_tenant("utf8");
                      const std::string bad = "caf\xC3";
                      CAIRN_CONFORM_THROWS(invalid_artifact, note(t, bad, "v").build());
                      CAIRN_CONFORM_THROWS(invalid_artifact, note(t, "x", "v").title(bad).build());
                      CAIRN_CONFORM_THROWS(invalid_artifact, note(t, "x", "v").description(bad).build());
                      CAIRN_CONFORM_THROWS(invalid_artifact, note(t, "x", "v").created_by(bad).build());
                      CAIRN_CONFORM_THROWS(invalid_artifact, note(t, "x", json{{"k", bad}}).build());
                      CAIRN_CONFORM_THROWS(invalid_artifact, note(t, "x", json{{bad, 1}}).build());
                      CAIRN_CONFORM_THROWS(invalid_artifact, note(t, "x", "v").metadata("k", bad).build());
                      // One to four bytes, the last code point, and the neighbours of the surrogate range.
                      const std::string text =
                          "a \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF \xED\x9F\xBF \xEE\x80\x80";
                      auto rec = note(t, "id-" + text, json{{text, text}})
                                     .title(text)
                                     .description(text)
                                     .purpose(text)
                                     .created_by("agent-" + text)
                                     .storage_url("s3://b/" + text)
                                     .metadata(json{{text, {text}}})
                                     .build();
                      (void)s.store(*rec);
                      const auto back = s.fetch("id-" + text, t);
                      CAIRN_CONFORM(back != nullptr);
                      CAIRN_CONFORM(back->title() == text && back->description() == text && back->purpose() == text);
                      CAIRN_CONFORM(back->created_by() == "agent-" + text && back->storage_url() == "s3://b/" + text);
                      CAIRN_CONFORM(back->value() == rec->value() && back->metadata() == rec->metadata());
                    }});

  checks.push_back(
      {"a prefix is matched byte-wise, also when it ends inside a UTF-8 sequence", [](ArtifactStore& s) {
         // "caf\xC3" is "café" cut after its first byte of "é": it matches every id whose bytes start with it, as the
         // documented byte-wise order says. A prefix no valid UTF-8 id can start with matches nothing.
         const auto t = fresh_tenant("prefix-utf8");
         for (const std::string id : {"cafe", "caf\xC3\xA9", "caf\xC3\xBC-2", "caf\xC4\x80", "caf\xC3\xA9s", "cafz",
                                      "\xE2\x82\xAC", "\xE2\x82\xAD", "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"}) {
           (void)s.store(*note(t, id, "v").build());
         }
         auto list = [&](const std::string& prefix, std::size_t limit = 100, std::string cursor = "") {
           ListQuery q;
           q.prefix = prefix;
           q.limit = limit;
           q.cursor = std::move(cursor);
           return s.list(t, q);
         };
         using ids = std::vector<std::string>;
         CAIRN_CONFORM(detail::ids_of(list("caf\xC3")) == (ids{"caf\xC3\xA9", "caf\xC3\xA9s", "caf\xC3\xBC-2"}));
         CAIRN_CONFORM(detail::ids_of(list("\xE2\x82")) == (ids{"\xE2\x82\xAC", "\xE2\x82\xAD"}));
         CAIRN_CONFORM(detail::ids_of(list("\xE2")) == (ids{"\xE2\x82\xAC", "\xE2\x82\xAD"}));
         CAIRN_CONFORM(detail::ids_of(list("\xF4\x8F\xBF")) == (ids{"\xF4\x8F\xBF\xBF"}));
         CAIRN_CONFORM(detail::ids_of(list("\xED")) == (ids{"\xED\x9F\xBF"}));
         // Pages of a truncated prefix follow on from each other.
         const auto first = list("caf\xC3", 2);
         CAIRN_CONFORM(detail::ids_of(first) == (ids{"caf\xC3\xA9", "caf\xC3\xA9s"}));
         CAIRN_CONFORM(first.next_cursor.has_value());
         CAIRN_CONFORM(detail::ids_of(list("caf\xC3", 2, *first.next_cursor)) == (ids{"caf\xC3\xBC-2"}));
         // Prefixes that no valid UTF-8 id can start with: a stray continuation byte, a byte that never occurs in
         // UTF-8, an overlong start, a surrogate start, an invalid byte followed by more text.
         for (const std::string prefix : {"caf\x80", "caf\xFF", "\xC0", "\xED\xA0", "\xF4\x90", "caf\xC3x", "\xF5"}) {
           CAIRN_CONFORM(list(prefix).items.empty());
         }
       }});

  checks.push_back({"concurrent stores of one id get distinct consecutive versions", [](ArtifactStore& s) {
                      const auto t = fresh_tenant("race");
                      constexpr int threads = 8;
                      constexpr int per_thread = 25;
                      std::vector<std::vector<std::uint64_t>> got(threads);
                      std::vector<std::thread> pool;
                      std::atomic<bool> failed{false};
                      for (int i = 0; i < threads; ++i) {
                        pool.emplace_back([&, i] {
                          try {
                            for (int k = 0; k < per_thread; ++k) {
                              const auto stored = s.store(*note(t, "shared", json{{"thread", i}, {"k", k}}).build());
                              got[static_cast<std::size_t>(i)].push_back(stored->version());
                              (void)s.fetch("shared", t);
                            }
                          } catch (...) {
                            failed = true;
                          }
                        });
                      }
                      for (auto& th : pool) th.join();
                      CAIRN_CONFORM(!failed);
                      std::set<std::uint64_t> all;
                      for (const auto& v : got) all.insert(v.begin(), v.end());
                      CAIRN_CONFORM(all.size() == threads * per_thread);
                      CAIRN_CONFORM(*all.begin() == 1);
                      CAIRN_CONFORM(*all.rbegin() == threads * per_thread);
                      for (const auto& v : got) CAIRN_CONFORM(std::is_sorted(v.begin(), v.end()));
                      CAIRN_CONFORM(s.versions("shared", t).size() == threads * per_thread);
                    }});

  checks.push_back(
      {"store_if creates only what is absent and replaces only the version it names", [](ArtifactStore& s) {
         const auto t = fresh_tenant("cond");
         const auto v1 = s.store_if(*note(t, "doc", "one").build(), ArtifactStore::absent);
         CAIRN_CONFORM(v1->version() == 1);
         // Creating again loses, names both versions, and stores nothing.
         conflict lost("", 0, 0);
         try {
           (void)s.store_if(*note(t, "doc", "again").build(), ArtifactStore::absent);
         } catch (const conflict& e) {
           lost = e;
         }
         CAIRN_CONFORM(lost.expected() == 0 && lost.actual() == 1);
         CAIRN_CONFORM(std::string(lost.what()).find("'doc'") != std::string::npos);
         CAIRN_CONFORM((s.versions("doc", t) == std::vector<std::uint64_t>{1}));
         CAIRN_CONFORM(s.fetch("doc", t)->value() == "one");
         // Replacing the version read wins once; the same expectation a second time loses.
         CAIRN_CONFORM(s.store_if(*note(t, "doc", "two").build(), 1)->version() == 2);
         try {
           (void)s.store_if(*note(t, "doc", "stale").build(), 1);
           lost = conflict("", 0, 0);
         } catch (const conflict& e) {
           lost = e;
         }
         CAIRN_CONFORM(lost.expected() == 1 && lost.actual() == 2);
         CAIRN_CONFORM_THROWS(conflict, s.store_if(*note(t, "doc", "ahead").build(), 7));
         CAIRN_CONFORM_THROWS(conflict, s.store_if(*note(t, "never", "x").build(), 1));
         CAIRN_CONFORM((s.versions("doc", t) == std::vector<std::uint64_t>{1, 2}));
         CAIRN_CONFORM(s.fetch("doc", t)->value() == "two");
         CAIRN_CONFORM(s.fetch("never", t) == nullptr);
         // Another tenant's id does not count; a removed id can be created again.
         CAIRN_CONFORM(
             s.store_if(*note(fresh_tenant("cond-other"), "doc", "b").build(), ArtifactStore::absent)->version() == 1);
         s.remove("doc", t);
         CAIRN_CONFORM(s.store_if(*note(t, "doc", "reborn").build(), ArtifactStore::absent)->version() == 1);
         // No id: creating draws a fresh one; anything else cannot be meant.
         const auto anon = s.store_if(*note(t, "", "anon").build(), ArtifactStore::absent);
         CAIRN_CONFORM(!anon->id().empty() && anon->version() == 1);
         CAIRN_CONFORM_THROWS(invalid_argument, s.store_if(*note(t, "", "anon").build(), 1));
       }});

  checks.push_back(
      {"store_if races: exactly one writer wins each expectation", [](ArtifactStore& s) {
         const auto t = fresh_tenant("cond-race");
         constexpr int threads = 8;
         constexpr int ids = 20;
         constexpr int attempts = 25;
         std::vector<int> creations(threads, 0);
         std::vector<std::vector<std::uint64_t>> replaced(threads);
         std::atomic<bool> failed{false};
         std::vector<std::thread> pool;
         for (int i = 0; i < threads; ++i) {
           pool.emplace_back([&, i] {
             try {
               // Every thread tries to create every id: one creation each.
               for (int k = 0; k < ids; ++k) {
                 try {
                   (void)s.store_if(*note(t, fmt::format("c{}", k), i).build(), ArtifactStore::absent);
                   ++creations[static_cast<std::size_t>(i)];
                 } catch (const conflict&) {
                 }
               }
               // Read-modify-write on one id: a version is replaced by exactly one writer.
               for (int k = 0; k < attempts; ++k) {
                 const auto seen = s.fetch("counter", t);
                 const std::uint64_t v = seen ? seen->version() : ArtifactStore::absent;
                 try {
                   const auto stored = s.store_if(*note(t, "counter", json{{"thread", i}, {"k", k}}).build(), v);
                   if (stored->version() != v + 1) failed = true;  // replaced a version it had not read
                   replaced[static_cast<std::size_t>(i)].push_back(stored->version());
                 } catch (const conflict& e) {
                   if (e.expected() != v || e.actual() == v) failed = true;
                 }
               }
             } catch (...) {
               failed = true;
             }
           });
         }
         for (auto& th : pool) th.join();
         CAIRN_CONFORM(!failed);
         int created = 0;
         for (int c : creations) created += c;
         CAIRN_CONFORM(created == ids);
         for (int k = 0; k < ids; ++k) CAIRN_CONFORM(s.versions(fmt::format("c{}", k), t).size() == 1);
         std::vector<std::uint64_t> won;
         for (const auto& r : replaced) won.insert(won.end(), r.begin(), r.end());
         std::sort(won.begin(), won.end());
         CAIRN_CONFORM(!won.empty());
         CAIRN_CONFORM(std::adjacent_find(won.begin(), won.end()) == won.end());  // no version won twice
         CAIRN_CONFORM(won.front() == 1);
         CAIRN_CONFORM(won.back() == won.size());  // 1..n, none lost
         CAIRN_CONFORM(s.versions("counter", t).size() == won.size());
       }});

  // ---- search (cairn/artifact/search.hpp): what every backend must find, and refuse (search_conformance.hpp)
  for (auto& check : search_conformance_checks()) checks.push_back(std::move(check));

  return checks;
}

#undef CAIRN_CONFORM
#undef CAIRN_CONFORM_THROWS

}  // namespace testing
CAIRN_END_NAMESPACE
