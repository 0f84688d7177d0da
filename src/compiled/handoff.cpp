// cairn::compiled: the bodies of cairn/handoff/ (its *-inl.hpp files), compiled once (docs/api.md, "Compiled mode").
#include "cairn/handoff/artifact_block-inl.hpp"
#include "cairn/handoff/handoff-inl.hpp"
#include "cairn/handoff/reference-inl.hpp"
#include "cairn/handoff/reveal-inl.hpp"
