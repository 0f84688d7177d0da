// cairn::compiled: the bodies of cairn/store/open_store.hpp that do not depend on the backends (its -inl.hpp file),
// compiled once (docs/api.md, "Compiled mode").
#include "cairn/store/open_store-inl.hpp"
