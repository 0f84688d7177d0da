// cairn — everything in one include. Layers added later (context, handoff, goals, workflow) join this list.
#pragma once

#include "cairn/version.hpp"
#include "cairn/error.hpp"
#include "cairn/artifact/type.hpp"
#include "cairn/artifact/record.hpp"
#include "cairn/artifact/message_part.hpp"
#include "cairn/artifact/a2a.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/artifact/memory_store.hpp"
#include "cairn/workflow/template.hpp"
#include "cairn/workflow/state.hpp"
#include "cairn/workflow/machine.hpp"
#include "cairn/workflow/state_file.hpp"
#include "cairn/workflow/tools.hpp"
#include "cairn/workflow/artefact_recorder.hpp"
