// cairn::compiled: the bodies of cairn/goals/ (its *-inl.hpp files), compiled once (docs/api.md, "Compiled mode").
#include "cairn/goals/engine-inl.hpp"
