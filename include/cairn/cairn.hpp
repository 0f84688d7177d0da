// cairn — the whole header-only core in one include (target cairn::cairn): the version and errors, artifacts and the
// in-memory store, handoff, workflow (JSON templates), execution context, durable runs (RunJournal, the in-memory
// journal, Run), goals, the MCP server pieces and the observability hooks (cairn/observe.hpp).
//
// Not included, on purpose — include them yourself where you need them:
//   cairn/store/*.hpp (sqlite_store, postgres_store, sqlite_journal, postgres_journal), cairn/workflow/yaml.hpp
//       declare the compiled parts; using them needs cairn::sqlite, cairn::postgres or cairn::yaml linked.
//   cairn/store/open_store.hpp
//       its body depends on which of those parts the including file links (CAIRN_HAS_SQLITE, CAIRN_HAS_POSTGRES).
//   cairn/observe/spdlog.hpp
//       the spdlog adapter of the observability hooks; needs spdlog (target cairn::spdlog, CAIRN_WITH_SPDLOG).
//   cairn/testing/*.hpp (clock, scripted_model, recording_store, store_conformance, search_conformance, ...)
//       the testing kit and the conformance suites: test code, not program code.
//   cairn/detail/..., cairn/context/detail/...
//       internals, included by the headers that need them.
#pragma once

#include "cairn/artifact/a2a.hpp"
#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/message_part.hpp"
#include "cairn/artifact/record.hpp"
#include "cairn/artifact/relevance.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/artifact/type.hpp"
#include "cairn/clock.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/plan.hpp"
#include "cairn/context/prompt.hpp"
#include "cairn/context/resolve.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/error.hpp"
#include "cairn/goals/dot.hpp"
#include "cairn/goals/engine.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/goals/goal_stack.hpp"
#include "cairn/goals/interfaces.hpp"
#include "cairn/goals/model_adapters.hpp"
#include "cairn/goals/sop.hpp"
#include "cairn/handoff/artifact_block.hpp"
#include "cairn/handoff/handoff.hpp"
#include "cairn/handoff/reference.hpp"
#include "cairn/handoff/reveal.hpp"
#include "cairn/mcp/artifact_tools.hpp"
#include "cairn/mcp/server.hpp"
#include "cairn/observe.hpp"
#include "cairn/run/journal.hpp"
#include "cairn/run/memory_journal.hpp"
#include "cairn/run/run.hpp"
#include "cairn/version.hpp"
#include "cairn/workflow/artifact_recorder.hpp"
#include "cairn/workflow/machine.hpp"
#include "cairn/workflow/run_state.hpp"
#include "cairn/workflow/state.hpp"
#include "cairn/workflow/state_file.hpp"
#include "cairn/workflow/template.hpp"
#include "cairn/workflow/tools.hpp"
