// cairn::detail — PersistentMap: a string-keyed hash array mapped trie (CHAMP layout) with structural sharing.
//
// ExecutionContext::fork() must cost the same whether the context holds ten bindings or a million, and a lookup in
// a context forked a thousand times must cost what it costs in the original. A persistent trie gives both: a copy
// of the map is one shared pointer, every later insert copies only the path to its leaf (at most
// ceil(64 / 5) + 1 nodes), and lookups walk at most that path whatever the history of forks was.
//
// Nodes carry an "edit token". A map mutates in place the nodes that carry its own token (it made them and nobody
// else can reach them) and copies the others. Whoever shares the trie (a fork) takes a fresh token on both sides,
// so neither ever writes a node the other can see. This is Clojure's transient trick; unlike checking
// shared_ptr::use_count() it needs no reasoning about other threads, so forks on different threads are race-free.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// FNV-1a over the bytes, then MurmurHash3's finalizer so that the low bits the trie uses first are well mixed.
/// Inline and cheap for the short names contexts hold (std::hash<std::string_view> is an out-of-line call).
struct NameHash {
  std::size_t operator()(std::string_view s) const noexcept {
    std::uint64_t h = 14695981039346656037ull;
    for (const char ch : s) {
      h ^= static_cast<unsigned char>(ch);
      h *= 1099511628211ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return static_cast<std::size_t>(h);
  }
};

/// A persistent map from std::string to V. Not thread-safe: one owner; copies made by share() may be used on other
/// threads, since no two owners ever write the same node.
template <typename V, typename Hash = NameHash>
class PersistentMap {
 public:
  struct Entry {
    std::size_t hash;
    std::string key;
    V value;
  };

  /// `edit` is this owner's token: any number that no other owner of a node of this trie uses.
  explicit PersistentMap(std::uint64_t edit = 1) : edit_(edit) {}

  /// This owner's edit token.
  std::uint64_t edit() const noexcept { return edit_; }

  /// A map sharing every node with this one, owned under `edit`; this map moves on to `own_edit`. O(1).
  PersistentMap share(std::uint64_t edit, std::uint64_t own_edit) {
    PersistentMap copy(edit);
    copy.root_ = root_;
    copy.size_ = size_;
    edit_ = own_edit;
    return copy;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  /// The entry for `key`, or null.
  const Entry* find(std::string_view key) const {
    const std::size_t h = Hash{}(key);
    const Node* node = root_.get();
    unsigned shift = 0;
    while (node) {
      if (shift >= hash_bits) {  // collision node: every entry has the same hash
        for (const Entry& e : node->data) {
          if (e.key == key) return &e;
        }
        return nullptr;
      }
      const std::uint32_t bit = bit_of(h, shift);
      if (node->datamap & bit) {
        const Entry& e = node->data[index_of(node->datamap, bit)];
        return e.hash == h && e.key == key ? &e : nullptr;
      }
      if (!(node->nodemap & bit)) return nullptr;
      node = node->nodes[index_of(node->nodemap, bit)].get();
      shift += bits_per_level;
    }
    return nullptr;
  }

  /// Inserts or replaces the value of `key`. Returns true when the key is new.
  bool set(std::string key, V value) {
    const std::size_t h = Hash{}(std::string_view(key));
    bool added = false;
    Entry entry{h, std::move(key), std::move(value)};
    if (!root_) {
      auto node = make_node();
      node->datamap = bit_of(h, 0);
      node->data.push_back(std::move(entry));
      root_ = std::move(node);
      added = true;
    } else {
      root_ = insert(root_, 0, std::move(entry), added);
    }
    if (added) ++size_;
    return added;
  }

  /// Calls `f(entry)` for every entry, in no particular order.
  template <typename F>
  void for_each(F&& f) const {
    if (!root_) return;
    std::vector<const Node*> todo{root_.get()};
    while (!todo.empty()) {
      const Node* node = todo.back();
      todo.pop_back();
      for (const Entry& e : node->data) f(e);
      for (const auto& child : node->nodes) todo.push_back(child.get());
    }
  }

 private:
  static constexpr unsigned bits_per_level = 5;
  static constexpr unsigned hash_bits = sizeof(std::size_t) * 8;

  struct Node {
    std::uint64_t edit = 0;
    std::uint32_t datamap = 0;  // slots holding an entry
    std::uint32_t nodemap = 0;  // slots holding a sub-node
    std::vector<Entry> data;    // by slot order; in a collision node (below the last level): all entries
    std::vector<std::shared_ptr<const Node>> nodes;
  };
  using NodePtr = std::shared_ptr<const Node>;

  static std::uint32_t bit_of(std::size_t hash, unsigned shift) noexcept {
    return std::uint32_t{1} << ((hash >> shift) & 31u);
  }
  // Portable popcount (no compiler builtin, no -mpopcnt needed): SWAR bit counting.
  static std::size_t index_of(std::uint32_t map, std::uint32_t bit) noexcept {
    std::uint32_t x = map & (bit - 1);
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0F0F0F0Fu;
    return static_cast<std::size_t>((x * 0x01010101u) >> 24);
  }

  std::shared_ptr<Node> make_node() const {
    auto node = std::make_shared<Node>();
    node->edit = edit_;
    return node;
  }

  // The node itself when this owner made it, else a copy that this owner may change.
  Node* editable(NodePtr& slot) const {
    if (slot->edit == edit_) return const_cast<Node*>(slot.get());  // created non-const by make_node
    auto copy = std::make_shared<Node>(*slot);
    copy->edit = edit_;
    Node* raw = copy.get();
    slot = std::move(copy);
    return raw;
  }

  NodePtr insert(NodePtr slot, unsigned shift, Entry&& entry, bool& added) const {
    Node* node = editable(slot);
    if (shift >= hash_bits) {
      for (Entry& e : node->data) {
        if (e.key == entry.key) {
          e.value = std::move(entry.value);
          return slot;
        }
      }
      node->data.push_back(std::move(entry));
      added = true;
      return slot;
    }
    const std::uint32_t bit = bit_of(entry.hash, shift);
    if (node->datamap & bit) {
      const std::size_t i = index_of(node->datamap, bit);
      Entry& existing = node->data[i];
      if (existing.hash == entry.hash && existing.key == entry.key) {
        existing.value = std::move(entry.value);
        return slot;
      }
      // Two keys in one slot: push both one level down.
      NodePtr sub = pair_node(std::move(existing), std::move(entry), shift + bits_per_level);
      node->data.erase(node->data.begin() + static_cast<std::ptrdiff_t>(i));
      node->datamap &= ~bit;
      node->nodemap |= bit;
      node->nodes.insert(node->nodes.begin() + static_cast<std::ptrdiff_t>(index_of(node->nodemap, bit)),
                         std::move(sub));
      added = true;
      return slot;
    }
    if (node->nodemap & bit) {
      NodePtr& child = node->nodes[index_of(node->nodemap, bit)];
      child = insert(std::move(child), shift + bits_per_level, std::move(entry), added);
      return slot;
    }
    node->datamap |= bit;
    node->data.insert(node->data.begin() + static_cast<std::ptrdiff_t>(index_of(node->datamap, bit)), std::move(entry));
    added = true;
    return slot;
  }

  NodePtr pair_node(Entry&& a, Entry&& b, unsigned shift) const {
    auto node = make_node();
    if (shift >= hash_bits) {
      node->data.push_back(std::move(a));
      node->data.push_back(std::move(b));
      return node;
    }
    const std::uint32_t bit_a = bit_of(a.hash, shift);
    const std::uint32_t bit_b = bit_of(b.hash, shift);
    if (bit_a == bit_b) {
      node->nodemap = bit_a;
      node->nodes.push_back(pair_node(std::move(a), std::move(b), shift + bits_per_level));
      return node;
    }
    node->datamap = bit_a | bit_b;
    if (bit_a < bit_b) {
      node->data.push_back(std::move(a));
      node->data.push_back(std::move(b));
    } else {
      node->data.push_back(std::move(b));
      node->data.push_back(std::move(a));
    }
    return node;
  }

  NodePtr root_;
  std::size_t size_ = 0;
  std::uint64_t edit_;
};

}  // namespace detail
CAIRN_END_NAMESPACE
