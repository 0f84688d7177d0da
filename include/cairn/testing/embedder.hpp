// cairn::testing — WordHashEmbedder: a deterministic stand-in for the host's embedding model (cairn::Embedder), for
// tests of search and of what uses it (SOP retrieval, the relevant catalog, the MCP search tool).
//
// Each word of a text (cairn's search tokenizer: ASCII letters and digits and UTF-8 characters, ASCII folded to
// lowercase) adds 1 to one of the first `dimension - 1` elements, chosen by the word's FNV-1a hash; the last element
// is a small constant, so no vector is ever all zeros. Texts with the same words point the same way, texts that share
// no word are nearly orthogonal (unless their words collide in a hash bucket), and the vectors are the same on every
// platform and every run. It is not a model of meaning: synonyms do not meet.
//
//     auto embedder = std::make_shared<cairn::testing::WordHashEmbedder>();   // "word-hash-8", 8 dimensions
//     cairn::InMemoryStoreOptions options;
//     options.embedder = embedder;
//     auto store = std::make_shared<cairn::InMemoryArtifactStore>(options);
//     // ... embedder->calls counts the batches embedded; embedder->fault makes the next calls misbehave.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cairn/artifact/search.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

/// A deterministic, thread-safe Embedder (see the header comment). `fault` makes it misbehave the way a broken model
/// adapter could, to test what the store does then.
class WordHashEmbedder final : public Embedder {
 public:
  enum class Fault {
    none,
    missing_vector,  ///< returns one vector fewer than it was given texts
    short_vector,    ///< the first vector has one element too few
    infinite,        ///< the first vector's element 2 is infinite
    throws,          ///< throws std::runtime_error("the model is down")
  };

  /// Throws cairn::invalid_argument for a dimension below 2 (one element is the constant).
  explicit WordHashEmbedder(std::size_t dimension = 8) : dimension_(dimension) {
    if (dimension_ < 2) throw invalid_argument("WordHashEmbedder: dimension must be at least 2");
  }

  std::string model() const override { return fmt::format("word-hash-{}", dimension_); }
  std::size_t dimension() const override { return dimension_; }

  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) override {
    ++calls;
    const Fault f = fault.load();
    if (f == Fault::throws) throw std::runtime_error("the model is down");
    std::vector<std::vector<float>> out;
    out.reserve(texts.size());
    for (const auto& t : texts) out.push_back(vector_of(t));
    if (f == Fault::missing_vector && !out.empty()) out.pop_back();
    if (f == Fault::short_vector && !out.empty()) out[0].pop_back();
    if (f == Fault::infinite && !out.empty() && out[0].size() > 2) out[0][2] = std::numeric_limits<float>::infinity();
    return out;
  }

  /// The vector of one text, as embed() makes it (without faults).
  std::vector<float> vector_of(const std::string& text) const {
    std::vector<float> v(dimension_, 0.0f);
    v[dimension_ - 1] = 0.01f;
    cairn::detail::for_each_word(text, [this, &v](const std::string& w) {
      std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: the same on every platform
      for (const char c : w) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ULL;
      }
      v[static_cast<std::size_t>(h % (dimension_ - 1))] += 1.0f;
    });
    return v;
  }

  std::atomic<int> calls{0};  ///< embed() calls so far (a store embeds on every storing thread, so atomic)
  std::atomic<Fault> fault{Fault::none};

 private:
  std::size_t dimension_;
};

}  // namespace testing
CAIRN_END_NAMESPACE
