// cairn::compiled: the bodies of cairn/workflow/ (its *-inl.hpp files), compiled once (docs/api.md, "Compiled mode").
#include "cairn/workflow/artifact_recorder-inl.hpp"
#include "cairn/workflow/machine-inl.hpp"
#include "cairn/workflow/run_state-inl.hpp"
#include "cairn/workflow/state-inl.hpp"
#include "cairn/workflow/state_file-inl.hpp"
#include "cairn/workflow/template-inl.hpp"
#include "cairn/workflow/tools-inl.hpp"
