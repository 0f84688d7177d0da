// cairn::detail — PersistentVector: an append-only vector with structural sharing (a 32-way bit-partitioned trie).
//
// The conversation log of an ExecutionContext: fork() shares it in O(1), and each side appends without the other
// seeing it. Appends copy at most the path to the last leaf (log32 n nodes) the first time after a share, and
// mutate in place after that, using the same edit tokens as PersistentMap. The trie is at most a handful of levels
// deep, so nothing here recurses deeply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// A persistent, append-only vector. Not thread-safe: one owner; copies made by share() may live on other threads.
template <typename T>
class PersistentVector {
 public:
  explicit PersistentVector(std::uint64_t edit = 1) : edit_(edit) {}

  /// This owner's edit token.
  std::uint64_t edit() const noexcept { return edit_; }

  /// A vector sharing every node with this one, owned under `edit`; this one moves on to `own_edit`. O(1).
  PersistentVector share(std::uint64_t edit, std::uint64_t own_edit) {
    PersistentVector copy(edit);
    copy.root_ = root_;
    copy.shift_ = shift_;
    copy.size_ = size_;
    edit_ = own_edit;
    return copy;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  /// The element at `i` (< size()).
  const T& operator[](std::size_t i) const {
    const Node* node = root_.get();
    for (unsigned s = shift_; s > 0; s -= bits) node = node->children[(i >> s) & mask].get();
    return node->items[i & mask];
  }

  void push_back(T value) {
    if (!root_) {
      root_ = leaf(std::move(value));
      shift_ = 0;
    } else if (size_ == (std::size_t{width} << shift_)) {  // full: grow a level
      auto top = make_node();
      top->children.push_back(std::move(root_));
      top->children.push_back(path(shift_, std::move(value)));
      root_ = std::move(top);
      shift_ += bits;
    } else {
      root_ = append(std::move(root_), shift_, std::move(value));
    }
    ++size_;
  }

 private:
  static constexpr unsigned bits = 5;
  static constexpr std::size_t width = std::size_t{1} << bits;
  static constexpr std::size_t mask = width - 1;

  struct Node {
    std::uint64_t edit = 0;
    std::vector<std::shared_ptr<const Node>> children;  // inner node
    std::vector<T> items;                               // leaf
  };
  using NodePtr = std::shared_ptr<const Node>;

  std::shared_ptr<Node> make_node() const {
    auto node = std::make_shared<Node>();
    node->edit = edit_;
    return node;
  }

  NodePtr leaf(T value) const {
    auto node = make_node();
    node->items.reserve(width);
    node->items.push_back(std::move(value));
    return node;
  }

  NodePtr path(unsigned shift, T value) const {
    if (shift == 0) return leaf(std::move(value));
    auto node = make_node();
    node->children.push_back(path(shift - bits, std::move(value)));
    return node;
  }

  Node* editable(NodePtr& slot) const {
    if (slot->edit == edit_) return const_cast<Node*>(slot.get());  // created non-const by make_node
    auto copy = std::make_shared<Node>(*slot);
    copy->edit = edit_;
    if (copy->children.empty()) copy->items.reserve(width);
    Node* raw = copy.get();
    slot = std::move(copy);
    return raw;
  }

  NodePtr append(NodePtr slot, unsigned shift, T value) {
    Node* node = editable(slot);
    if (shift == 0) {
      node->items.push_back(std::move(value));
      return slot;
    }
    const std::size_t i = (size_ >> shift) & mask;
    if (i < node->children.size()) {
      node->children[i] = append(std::move(node->children[i]), shift - bits, std::move(value));
    } else {
      node->children.push_back(path(shift - bits, std::move(value)));
    }
    return slot;
  }

  NodePtr root_;
  unsigned shift_ = 0;
  std::size_t size_ = 0;
  std::uint64_t edit_;
};

}  // namespace detail
CAIRN_END_NAMESPACE
