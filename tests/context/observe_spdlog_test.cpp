// The spdlog adapter (cairn/observe/spdlog.hpp, CAIRN_WITH_SPDLOG=ON): cairn's events land as lines in a real
// spdlog logger (an ostream sink), with their fields, at the configured levels.
#include <memory>
#include <sstream>
#include <string>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/observe.hpp"
#include "cairn/observe/spdlog.hpp"
#include "catch.hpp"

TEST_CASE("SpdlogObserver writes one line per event with its fields, failures at the error level") {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto logger = std::make_shared<spdlog::logger>("cairn-test", sink);
  logger->set_pattern("[%l] %v");
  logger->set_level(spdlog::level::debug);
  auto store = cairn::observed(std::make_shared<cairn::InMemoryArtifactStore>(),
                               std::make_shared<cairn::SpdlogObserver>(logger));

  (void)store->store(*cairn::ArtifactRecord::builder()
                          .tenant_id("acme")
                          .id("a1")
                          .type(cairn::ArtifactType::data)
                          .description("d")
                          .value(nlohmann::json{{"k", 1}})
                          .build());
  CHECK_THROWS_AS(store->remove("zz", "acme"), cairn::not_found);
  logger->flush();
  const std::string text = out.str();
  CHECK(text.find("[debug] cairn store store subject='a1' tenant='acme' ") != std::string::npos);
  CHECK(text.find("in=7B out=0B items=1\n") != std::string::npos);
  CHECK(text.find("[warning] cairn store remove subject='zz' tenant='acme' ") != std::string::npos);
  CHECK(text.find("failed: not_found: artifact 'zz' not found in tenant 'acme'\n") != std::string::npos);

  SECTION("a logger that would drop the line formats nothing and writes nothing") {
    out.str("");
    logger->set_level(spdlog::level::info);
    (void)store->fetch("a1", "acme");
    logger->flush();
    CHECK(out.str().empty());
  }
  REQUIRE_THROWS_AS(cairn::SpdlogObserver(nullptr), cairn::invalid_argument);
}
