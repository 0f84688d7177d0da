// cairn::compiled: the bodies of cairn/artifact/ (its *-inl.hpp files), compiled once (docs/api.md, "Compiled mode").
#include "cairn/artifact/a2a-inl.hpp"
#include "cairn/artifact/memory_store-inl.hpp"
#include "cairn/artifact/message_part-inl.hpp"
#include "cairn/artifact/record-inl.hpp"
#include "cairn/artifact/store-inl.hpp"
#include "cairn/detail/json-inl.hpp"
