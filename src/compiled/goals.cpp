// cairn::compiled: the bodies of cairn/goals/ (its *-inl.hpp files), compiled once (docs/api.md, "Compiled mode").
#include "cairn/goals/dot-inl.hpp"
#include "cairn/goals/engine-inl.hpp"
#include "cairn/goals/goal-inl.hpp"
#include "cairn/goals/goal_stack-inl.hpp"
#include "cairn/goals/interfaces-inl.hpp"
#include "cairn/goals/model_adapters-inl.hpp"
#include "cairn/goals/sop-inl.hpp"
