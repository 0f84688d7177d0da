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
#include "cairn/context/resolve.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/context/plan.hpp"
#include "cairn/context/prompt.hpp"
