// cairn::compiled: the bodies of cairn/context/ (its *-inl.hpp files), compiled once (docs/api.md, "Compiled mode").
#include "cairn/context/execution_context-inl.hpp"
#include "cairn/context/plan-inl.hpp"
#include "cairn/context/prompt-inl.hpp"
#include "cairn/context/resolve-inl.hpp"
#include "cairn/context/schema-inl.hpp"
#include "cairn/context/tool-inl.hpp"
