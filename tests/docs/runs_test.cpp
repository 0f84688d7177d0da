// The C++ snippets of docs/runs.md, each between `// [docs:<name>]` and `// [docs:end]` (check_snippets.cmake checks
// that the page shows exactly these lines). Snippets stand at column 0, as on the page; an #include line in one is a
// no-op here (the header is included above).
#include <memory>
#include <string>

#include "cairn/cairn.hpp"
#include "cairn/run/run.hpp"
#include "cairn/store/open_store.hpp"
#include "cairn/testing/scripted_goals.hpp"
#include "catch.hpp"
#if defined(CAIRN_HAS_SQLITE)
#include "cairn/store/sqlite_journal.hpp"
#endif

TEST_CASE("docs/runs.md: a run resumed from its journal") {
  const std::string url = "memory:";
  cairn::ToolRegistry tools;
  auto interpreter = std::make_shared<cairn::testing::ScriptedInterpreter>();
  cairn::GoalEngineParts parts{interpreter, std::make_shared<cairn::testing::ScriptedPlanner>()};
  interpreter->reply(cairn::Interpretation::continue_conversation());
// [docs:in-brief]
#include <cairn/run/run.hpp>
#include <cairn/store/open_store.hpp>  // open_store, open_run_journal

  auto store = cairn::open_store(url);          // memory:, sqlite:agents.db, postgres:host=... dbname=...
  auto journal = cairn::open_run_journal(url);  // the same file or database (sqlite:agents.db?synchronous=normal:
                                                // SQLite's NORMAL mode; see docs/stores.md)
  cairn::Run run(journal, "acme", "order-42");  // new, or resumed where it stopped
  cairn::ExecutionContext ctx(store, "acme");
  ctx.attach(run);  // rebuilt from the journal when the run exists
  cairn::GoalEngine engine(ctx, tools, parts);
  engine.attach(run);  // attach the context first
                       // [docs:end]
  engine.handle("hi");
  cairn::Run again(journal, "acme", "order-42");
  cairn::ExecutionContext resumed(store, "acme");
  resumed.attach(again);
  CHECK(resumed.messages().size() == ctx.messages().size());
  CHECK_FALSE(resumed.messages().empty());
}

#if defined(CAIRN_HAS_SQLITE)
namespace docs_runs {

// Compiled, not run: the page's file name is a placeholder.
std::uint64_t sqlite_journal(const cairn::JournalEntry& entry) {
  // [docs:sqlite-journal]
  cairn::SqliteRunJournal journal("agents.db");  // the same file SqliteArtifactStore("agents.db") uses
  auto seq = journal.append("acme", "run-7", 0, {entry});
  // [docs:end]
  return seq;
}

}  // namespace docs_runs
#endif
