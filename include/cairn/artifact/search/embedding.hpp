// cairn::detail — a host's embedder called and its answer checked before anything is stored or searched.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cairn/artifact/search.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

// ---- embedding

/// `embedder.embed(texts)` checked: one vector per text, each of the embedder's dimension, every element finite.
/// Throws cairn::invalid_argument naming the model and what is wrong (nothing is stored then).
inline std::vector<Embedding> embed_checked(Embedder& embedder, const std::vector<std::string>& texts) {
  const std::string model = embedder.model();
  const std::size_t dimension = embedder.dimension();
  if (model.empty() || dimension == 0 || dimension > SearchQuery::max_dimension) {
    throw invalid_argument(fmt::format("embedder '{}': needs a model name and a dimension of 1 to {} (got {})",
                                       excerpt(model, 80), SearchQuery::max_dimension, dimension));
  }
  auto vectors = embedder.embed(texts);
  if (vectors.size() != texts.size()) {
    throw invalid_argument(fmt::format("embedder '{}': returned {} vectors for {} texts", excerpt(model, 80),
                                       vectors.size(), texts.size()));
  }
  std::vector<Embedding> out;
  out.reserve(vectors.size());
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    if (vectors[i].size() != dimension) {
      throw invalid_argument(fmt::format("embedder '{}': vector {} has {} dimensions, not {}", excerpt(model, 80), i,
                                         vectors[i].size(), dimension));
    }
    for (std::size_t k = 0; k < dimension; ++k) {
      if (!std::isfinite(vectors[i][k])) {
        throw invalid_argument(
            fmt::format("embedder '{}': vector {} [{}] is not a finite number", excerpt(model, 80), i, k));
      }
    }
    out.push_back(Embedding{model, std::move(vectors[i])});
  }
  return out;
}

}  // namespace detail
CAIRN_END_NAMESPACE
