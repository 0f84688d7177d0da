// The persistent trie and vector behind ExecutionContext, checked against std::map / std::vector under random
// operations and shares, including keys whose hashes collide completely.
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/context/detail/persistent_map.hpp"
#include "cairn/context/detail/persistent_vector.hpp"
#include "catch.hpp"

namespace {

// Every key lands in a handful of hashes: exercises deep paths and the collision nodes below the last level.
struct CollidingHash {
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s) % 3; }
};

template <typename Map>
void check_equal(const Map& m, const std::map<std::string, int>& model) {
  REQUIRE(m.size() == model.size());
  for (const auto& [k, v] : model) {
    const auto* e = m.find(k);
    REQUIRE(e != nullptr);
    REQUIRE(e->value == v);
  }
  std::size_t seen = 0;
  m.for_each([&](const auto& e) {
    ++seen;
    REQUIRE(model.at(e.key) == e.value);
  });
  REQUIRE(seen == model.size());
}

template <typename Hash>
void random_shares() {
  std::mt19937 rng(42);
  std::uint64_t token = 10;
  using Map = cairn::detail::PersistentMap<int, Hash>;
  std::vector<std::pair<Map, std::map<std::string, int>>> versions;
  versions.emplace_back(Map(token++), std::map<std::string, int>{});
  for (int step = 0; step < 4000; ++step) {
    auto& [m, model] = versions[rng() % versions.size()];
    if (rng() % 50 == 0 && versions.size() < 20) {
      const std::uint64_t a = token++, b = token++;
      Map copy = m.share(a, b);
      auto copy_model = model;
      versions.emplace_back(std::move(copy), std::move(copy_model));
      continue;
    }
    const std::string key = "k" + std::to_string(rng() % 600);
    const int value = static_cast<int>(rng());
    const bool fresh = model.find(key) == model.end();
    REQUIRE(m.set(key, value) == fresh);
    model[key] = value;
  }
  for (const auto& [m, model] : versions) check_equal(m, model);
  REQUIRE(versions[0].first.find("absent") == nullptr);
}

}  // namespace

TEST_CASE("PersistentMap matches std::map across shares") { random_shares<std::hash<std::string_view>>(); }

TEST_CASE("PersistentMap handles keys whose hashes collide") { random_shares<CollidingHash>(); }

TEST_CASE("PersistentMap share leaves both sides independent") {
  cairn::detail::PersistentMap<int> a(1);
  for (int i = 0; i < 1000; ++i) a.set("k" + std::to_string(i), i);
  auto b = a.share(2, 3);
  a.set("k1", -1);
  b.set("k2", -2);
  a.set("only_a", 1);
  REQUIRE(a.find("k1")->value == -1);
  REQUIRE(b.find("k1")->value == 1);
  REQUIRE(a.find("k2")->value == 2);
  REQUIRE(b.find("k2")->value == -2);
  REQUIRE(b.find("only_a") == nullptr);
  REQUIRE(a.size() == 1001);
  REQUIRE(b.size() == 1000);
}

TEST_CASE("PersistentVector matches std::vector across shares") {
  std::mt19937 rng(7);
  std::uint64_t token = 10;
  using Vec = cairn::detail::PersistentVector<int>;
  std::vector<std::pair<Vec, std::vector<int>>> versions;
  versions.emplace_back(Vec(token++), std::vector<int>{});
  for (int step = 0; step < 40000; ++step) {
    auto& [v, model] = versions[rng() % versions.size()];
    if (rng() % 500 == 0 && versions.size() < 16) {
      const std::uint64_t a = token++, b = token++;
      Vec copy = v.share(a, b);
      auto copy_model = model;
      versions.emplace_back(std::move(copy), std::move(copy_model));
      continue;
    }
    const int x = static_cast<int>(rng());
    v.push_back(x);
    model.push_back(x);
  }
  for (const auto& [v, model] : versions) {
    REQUIRE(v.size() == model.size());
    for (std::size_t i = 0; i < model.size(); ++i) REQUIRE(v[i] == model[i]);
  }
}
