// cairn::compiled: the bodies of cairn/run/ (its *-inl.hpp files), compiled once (docs/api.md, "Compiled mode").
#include "cairn/run/journal-inl.hpp"
#include "cairn/run/memory_journal-inl.hpp"
#include "cairn/run/run-inl.hpp"
