// ExecutionContext: bindings through a real InMemoryArtifactStore, names, the conversation log, fork and merge,
// and forks used on several threads at once.
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "catch.hpp"

using cairn::ArtifactRecord;
using cairn::ExecutionContext;
using cairn::Role;
using nlohmann::json;

namespace {

ArtifactRecord::Builder data(json value, std::string description = "some data") {
  return ArtifactRecord::builder()
      .type(cairn::ArtifactType::data)
      .description(std::move(description))
      .value(std::move(value));
}

std::vector<std::string> names_of(const ExecutionContext& ctx) {
  std::vector<std::string> out;
  for (const auto& a : ctx.list_artifacts()) out.push_back(a.name);
  return out;
}

std::size_t stored_count(const cairn::ArtifactStore& store, const std::string& tenant) {
  cairn::ListQuery q;
  q.limit = 1000;
  std::size_t n = 0;
  for (;;) {
    auto page = store.list(tenant, q);
    n += page.items.size();
    if (!page.next_cursor) return n;
    q.cursor = *page.next_cursor;
  }
}

}  // namespace

TEST_CASE("a context needs a store and a tenant") {
  REQUIRE_THROWS_AS(ExecutionContext(nullptr, "acme"), cairn::invalid_argument);
  REQUIRE_THROWS_AS(ExecutionContext(std::make_shared<cairn::InMemoryArtifactStore>(), ""), cairn::invalid_argument);
  static_assert(!std::is_copy_constructible_v<ExecutionContext>, "copies would share trie nodes; fork() instead");
  static_assert(std::is_nothrow_move_constructible_v<ExecutionContext>);
}

TEST_CASE("add_artifact stores through the store, stamped with the context's tenant") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext ctx(store, "acme");

  // A record built for another tenant is stored in the context's tenant; created_at set by the caller stays.
  auto foreign = data({{"port", 3000}}, "Server configuration").tenant_id("other").created_at(1234567890).build();
  const auto stored = ctx.add_artifact("app_config", *foreign);
  REQUIRE(stored->tenant_id() == "acme");
  REQUIRE(stored->version() == 1);
  REQUIRE_FALSE(stored->id().empty());
  REQUIRE(stored->created_at() == 1234567890);
  REQUIRE(store->fetch(stored->id(), "acme") == stored);
  REQUIRE(store->fetch(stored->id(), "other") == nullptr);

  REQUIRE(ctx.get_artifact("app_config") == stored);
  REQUIRE(*ctx.get_artifact_value("app_config") == json{{"port", 3000}});
  // The value is shared with the stored record, not copied.
  REQUIRE(ctx.get_artifact_value("app_config") == stored->shared_value());
  REQUIRE(ctx.get_artifact("missing") == nullptr);
  REQUIRE(ctx.get_artifact_value("missing") == nullptr);
  REQUIRE(ctx.has_artifact("app_config"));
  REQUIRE_FALSE(ctx.has_artifact("missing"));

  // A builder needs no tenant; created_at 0 becomes the store's clock.
  const auto built = ctx.add_artifact("server_file", ArtifactRecord::builder()
                                                         .type(cairn::ArtifactType::file)
                                                         .description("Server implementation")
                                                         .value("/tmp/server.js"));
  REQUIRE(built->tenant_id() == "acme");
  REQUIRE(built->created_at() > 0);
  REQUIRE(*ctx.get_artifact_value("server_file") == "/tmp/server.js");
  REQUIRE(stored_count(*store, "acme") == 2);
}

TEST_CASE("list_artifacts keeps insertion order, a rebound name keeps its place and shows the new record") {
  ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  for (const char* name : {"zeta", "alpha", "mid", "beta"}) ctx.add_artifact(name, data(name));
  REQUIRE(names_of(ctx) == std::vector<std::string>{"zeta", "alpha", "mid", "beta"});
  ctx.add_artifact("alpha", data("second"));
  REQUIRE(names_of(ctx) == std::vector<std::string>{"zeta", "alpha", "mid", "beta"});
  REQUIRE(*ctx.get_artifact_value("alpha") == "second");
  REQUIRE(ctx.artifact_count() == 4);

  // Many names: order and lookups stay right past the trie's first levels.
  for (int i = 0; i < 3000; ++i) ctx.add_artifact("n" + std::to_string(i), data(i));
  const auto all = ctx.list_artifacts();
  REQUIRE(all.size() == 3004);
  for (int i = 0; i < 3000; ++i) {
    REQUIRE(all[4 + static_cast<std::size_t>(i)].name == "n" + std::to_string(i));
    REQUIRE(*ctx.get_artifact_value("n" + std::to_string(i)) == i);
  }
}

TEST_CASE("artifact names must match [A-Za-z_][A-Za-z0-9_-]{0,127}, a bad one stores and binds nothing") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext ctx(store, "acme");
  ctx.add_artifact("kept", data(1));
  for (const std::string& bad :
       {std::string(), std::string("1abc"), std::string("-x"), std::string("a b"), std::string("a.b"),
        std::string("@x"), std::string("a/b"), std::string("na\xC3\xAFve"), std::string("x") + std::string(128, 'y')}) {
    INFO(bad);
    REQUIRE_THROWS_AS(ctx.add_artifact(bad, data(2)), cairn::invalid_argument);
    REQUIRE_THROWS_WITH(ctx.add_artifact(bad, data(2)),
                        cairn_test::ContainsSubstring("artifact name: '") &&
                            cairn_test::ContainsSubstring("is not valid (expected [A-Za-z_][A-Za-z0-9_-]{0,127})"));
    REQUIRE_FALSE(ExecutionContext::is_valid_name(bad));
  }
  for (const std::string& good : {std::string("_"), std::string("a"), std::string("A-b_9"), std::string("_x-"),
                                  std::string("x") + std::string(127, 'y')}) {
    INFO(good);
    REQUIRE(ExecutionContext::is_valid_name(good));
    ctx.add_artifact(good, data(3));
    REQUIRE(ctx.has_artifact(good));
  }
  REQUIRE(stored_count(*store, "acme") == 6);
  REQUIRE(*ctx.get_artifact_value("kept") == 1);
}

TEST_CASE("an invalid record is rejected with the field named, and nothing is bound") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext ctx(store, "acme");
  REQUIRE_THROWS_WITH(ctx.add_artifact("x", ArtifactRecord::builder().type("data").value(1)),
                      cairn_test::ContainsSubstring("title, description"));
  REQUIRE_THROWS_WITH(ctx.add_artifact("x", ArtifactRecord::builder().type("data").description("d")),
                      cairn_test::ContainsSubstring("value, storage_url"));
  REQUIRE_FALSE(ctx.has_artifact("x"));
  REQUIRE(stored_count(*store, "acme") == 0);
}

TEST_CASE("bind binds a stored record of the same tenant without storing it again") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext ctx(store, "acme");
  const auto stored = store->store(*data(5).tenant_id("acme").build());
  ctx.bind("five", stored);
  REQUIRE(ctx.get_artifact("five") == stored);
  REQUIRE(stored_count(*store, "acme") == 1);

  REQUIRE_THROWS_WITH(ctx.bind("n", nullptr), "bind 'n': record must not be null");
  REQUIRE_THROWS_WITH(ctx.bind("n", store->store(*data(1).tenant_id("other").build())),
                      "bind 'n': the record belongs to another tenant");
  REQUIRE_THROWS_WITH(ctx.bind("n", data(1).tenant_id("acme").build()),
                      "bind 'n': the record has not been stored (use add_artifact)");
  REQUIRE_THROWS_AS(ctx.bind("bad name", stored), cairn::invalid_argument);
  REQUIRE_FALSE(ctx.has_artifact("n"));
}

TEST_CASE("the conversation log keeps role, content and time, oldest first") {
  ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  REQUIRE(ctx.message_count() == 0);
  REQUIRE(ctx.messages().empty());
  const auto before = cairn::detail::now_ms();
  ctx.add_message(Role::user, "Create a web server");
  ctx.add_message(Role::assistant, "On it");
  ctx.add_message(Role::system, "Budget: 3 tools");
  ctx.add_message(cairn::Message{Role::tool, "exit 0", 42});
  REQUIRE(ctx.message_count() == 4);
  REQUIRE(ctx.message(0).role == Role::user);
  REQUIRE(ctx.message(0).content == "Create a web server");
  REQUIRE(ctx.message(0).timestamp >= before);
  REQUIRE(ctx.message(3) == cairn::Message{Role::tool, "exit 0", 42});
  REQUIRE_THROWS_WITH(ctx.message(4), "message: index 4 is out of range (the log holds 4)");
  const auto last = ctx.last_messages(2);
  REQUIRE(last.size() == 2);
  REQUIRE(last[0].content == "Budget: 3 tools");
  REQUIRE(last[1].content == "exit 0");
  REQUIRE(ctx.last_messages(100).size() == 4);
  REQUIRE(ctx.last_messages(0).empty());
  REQUIRE(json(ctx.message(3)) == json{{"role", "tool"}, {"content", "exit 0"}, {"timestamp", 42}});
}

TEST_CASE("roles convert to and from their names") {
  for (Role r : {Role::user, Role::assistant, Role::system, Role::tool}) {
    REQUIRE(cairn::role_from_string(cairn::to_string(r)) == r);
  }
  REQUIRE_THROWS_WITH(cairn::role_from_string("robot"), "role: 'robot' is not one of user, assistant, system, tool");
  REQUIRE_THROWS_AS(cairn::role_from_string("User"), cairn::invalid_argument);
}

TEST_CASE("fork is a snapshot both ways") {
  ExecutionContext parent(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  parent.add_artifact("shared", data("before"));
  parent.add_message(Role::user, "hello");

  ExecutionContext child = parent.fork();
  REQUIRE(child.tenant_id() == "acme");
  REQUIRE(child.store() == parent.store());
  REQUIRE(*child.get_artifact_value("shared") == "before");
  REQUIRE(child.message_count() == 1);

  parent.add_artifact("shared", data("parent wrote"));
  parent.add_artifact("parent_only", data(1));
  parent.add_message(Role::assistant, "parent says");
  child.add_artifact("shared", data("child wrote"));
  child.add_artifact("child_only", data(2));
  child.add_message(Role::assistant, "child says");

  REQUIRE(*parent.get_artifact_value("shared") == "parent wrote");
  REQUIRE(*child.get_artifact_value("shared") == "child wrote");
  REQUIRE_FALSE(parent.has_artifact("child_only"));
  REQUIRE_FALSE(child.has_artifact("parent_only"));
  REQUIRE(parent.message(1).content == "parent says");
  REQUIRE(child.message(1).content == "child says");
  REQUIRE(parent.message_count() == 2);
  REQUIRE(child.message_count() == 2);
  REQUIRE(names_of(child) == std::vector<std::string>{"shared", "child_only"});
}

TEST_CASE("a chain of 1,000 forks sees every level's writes and nothing later") {
  ExecutionContext root(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  for (int i = 0; i < 100; ++i) root.add_artifact("base" + std::to_string(i), data(i));
  std::vector<ExecutionContext> chain;
  chain.push_back(root.fork());
  for (int i = 1; i < 1000; ++i) {
    chain.back().add_artifact("level" + std::to_string(i), data(i));
    chain.back().add_message(Role::assistant, "level " + std::to_string(i));
    chain.push_back(chain.back().fork());
  }
  const ExecutionContext& last = chain.back();
  REQUIRE(last.artifact_count() == 100 + 999);
  REQUIRE(last.message_count() == 999);
  REQUIRE(*last.get_artifact_value("base42") == 42);
  REQUIRE(*last.get_artifact_value("level500") == 500);
  REQUIRE(last.message(499).content == "level 500");
  // chain[10] wrote level11 before chain[11] was forked from it; level12 came later, in chain[11].
  REQUIRE(chain[10].has_artifact("level11"));
  REQUIRE_FALSE(chain[10].has_artifact("level12"));
  REQUIRE(chain[11].has_artifact("level12"));
  REQUIRE_FALSE(root.has_artifact("level1"));
}

TEST_CASE("merge brings back what children added after the fork, later writes winning") {
  ExecutionContext parent(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  parent.add_artifact("a", data("parent a"));
  parent.add_artifact("b", data("parent b"));
  parent.add_message(Role::user, "start");

  ExecutionContext first = parent.fork();
  ExecutionContext second = parent.fork();
  first.add_artifact("from_first", data(1));
  first.add_artifact("a", data("first a"));  // earlier than the parent's own write of a below
  second.add_artifact("from_second", data(2));
  second.add_artifact("b", data("second b"));
  parent.add_artifact("a", data("parent a again"));
  first.add_artifact("shared", data("first shared"));
  second.add_artifact("shared", data("second shared"));  // the later of the two children's writes
  first.add_message(Role::assistant, "first done");
  second.add_message(Role::assistant, "second done");
  parent.add_message(Role::system, "waiting");

  parent.merge({second, first});
  REQUIRE(*parent.get_artifact_value("a") == "parent a again");  // the parent wrote a after first did
  REQUIRE(*parent.get_artifact_value("b") == "second b");        // the child's write is newer
  REQUIRE(*parent.get_artifact_value("shared") == "second shared");
  REQUIRE(*parent.get_artifact_value("from_first") == 1);
  REQUIRE(*parent.get_artifact_value("from_second") == 2);
  // Names keep the order in which they were first bound, whichever context bound them.
  REQUIRE(names_of(parent) == std::vector<std::string>{"a", "b", "from_first", "from_second", "shared"});
  // Messages: the parent's, then each child's new ones in the order the children were given.
  std::vector<std::string> log;
  for (const auto& m : parent.messages()) log.push_back(m.content);
  REQUIRE(log == std::vector<std::string>{"start", "waiting", "second done", "first done"});

  // Merging again brings only what was added since.
  parent.merge(first);
  REQUIRE(parent.message_count() == 4);
  first.add_artifact("late", data(3));
  first.add_message(Role::assistant, "late");
  parent.merge(first);
  REQUIRE(*parent.get_artifact_value("late") == 3);
  REQUIRE(parent.message_count() == 5);
}

TEST_CASE("merge refuses contexts that are not forks of this one, before changing anything") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext parent(store, "acme");
  ExecutionContext stranger(store, "acme");
  ExecutionContext child = parent.fork();
  ExecutionContext grandchild = child.fork();
  child.add_artifact("c", data(1));
  stranger.add_artifact("s", data(1));
  grandchild.add_artifact("g", data(1));
  REQUIRE_THROWS_WITH(parent.merge({child, stranger}), "merge: a child is not a fork of this context");
  REQUIRE_THROWS_AS(parent.merge(grandchild), cairn::invalid_argument);
  REQUIRE_THROWS_AS(parent.merge(parent), cairn::invalid_argument);
  REQUIRE_FALSE(parent.has_artifact("c"));
  REQUIRE_FALSE(parent.has_artifact("s"));

  // Through the lineage it works: grandchild into child, child into parent.
  child.merge(grandchild);
  parent.merge(child);
  REQUIRE(parent.has_artifact("g"));
  REQUIRE(parent.has_artifact("c"));
}

TEST_CASE("forks run on several threads at once over one shared store") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext parent(store, "acme");
  for (int i = 0; i < 500; ++i) parent.add_artifact("base" + std::to_string(i), data(i));
  parent.add_message(Role::user, "fan out");

  constexpr int workers = 4;
  constexpr int per_worker = 300;
  std::vector<ExecutionContext> forks;
  for (int w = 0; w < workers; ++w) forks.push_back(parent.fork());
  std::vector<std::thread> threads;
  std::vector<int> failures(workers, 0);
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      ExecutionContext& ctx = forks[static_cast<std::size_t>(w)];
      for (int i = 0; i < per_worker; ++i) {
        const std::string name = "w" + std::to_string(w) + "_" + std::to_string(i);
        ctx.add_artifact(name, data(i));
        ctx.add_artifact("base" + std::to_string(i), data(-w));  // rebinding shared names on every thread
        ctx.add_message(Role::tool, name);
        const json resolved = ctx.resolve({{"mine", "@" + name}, {"base", "@base499"}});
        if (resolved != json{{"mine", i}, {"base", 499}}) ++failures[static_cast<std::size_t>(w)];
        ExecutionContext nested = ctx.fork();  // forks of forks on this thread too
        nested.add_artifact("nested", data(i));
        if (ctx.has_artifact("nested")) ++failures[static_cast<std::size_t>(w)];
      }
    });
  }
  // The parent keeps working while its forks run.
  for (int i = 0; i < 200; ++i) parent.add_artifact("parent" + std::to_string(i), data(i));
  for (auto& t : threads) t.join();
  for (int f : failures) REQUIRE(f == 0);
  REQUIRE(parent.artifact_count() == 700);

  parent.merge({forks[0], forks[1], forks[2], forks[3]});
  REQUIRE(parent.artifact_count() == 700 + workers * per_worker);
  REQUIRE(parent.message_count() == 1 + workers * per_worker);
  REQUIRE(*parent.get_artifact_value("w3_299") == 299);
  REQUIRE(*parent.get_artifact_value("base400") == 400);  // no fork touched base400
  // base0..299 were rebound on all four threads; whichever write was last wins, and it is one of theirs.
  const int v = parent.get_artifact_value("base7")->get<int>();
  REQUIRE((v <= 0 && v > -workers));
  // Every add_artifact on every thread reached the shared store: 700 + 4 * 300 * 3.
  REQUIRE(stored_count(*store, "acme") == 4300);
}
