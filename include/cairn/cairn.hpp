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
#include "cairn/handoff/artifact_block.hpp"
#include "cairn/handoff/reference.hpp"
#include "cairn/handoff/reveal.hpp"
#include "cairn/handoff/handoff.hpp"
