// cairn — SpdlogObserver: cairn's events as spdlog log lines (header-only; link spdlog::spdlog, or cairn::spdlog).
//
// Installed with CAIRN_WITH_SPDLOG=ON. A small adapter meant to be used as it is or copied and changed: it shows
// everything an Observer has to do (filter cheaply, format, never throw). Successful calls are logged at `level`
// (debug by default), failures at `error_level` (warn); nothing is formatted when the logger would drop the line.
//
//     auto log = spdlog::stdout_color_mt("cairn");
//     log->set_level(spdlog::level::debug);
//     auto obs = std::make_shared<cairn::SpdlogObserver>(log);
//     auto store = cairn::observed(cairn::open_store(url), obs);
//
// One line per event:
//     cairn tool_call execute subject='train-search-api' tenant='travel-desk' 0.174ms in=61B out=191B items=1
//     cairn store remove subject='a1' tenant='acme' 0.004ms in=0B out=0B items=0 failed: not_found: artifact ...
#pragma once

#include <memory>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "cairn/error.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// How SpdlogObserver logs.
struct SpdlogObserverOptions {
  spdlog::level::level_enum level = spdlog::level::debug;       ///< events that succeeded
  spdlog::level::level_enum error_level = spdlog::level::warn;  ///< events that failed
};

/// An Observer that writes each event as one line to a spdlog logger. Thread-safe when the logger is (the `_mt`
/// loggers and sinks are). What the logger throws is dropped (spdlog's own error handler sees it first).
class SpdlogObserver final : public Observer {
 public:
  /// Throws cairn::invalid_argument for a null logger.
  explicit SpdlogObserver(std::shared_ptr<spdlog::logger> logger, SpdlogObserverOptions options = {})
      : logger_(std::move(logger)), options_(options) {
    if (!logger_) throw invalid_argument("SpdlogObserver: logger must not be null");
  }

  const std::shared_ptr<spdlog::logger>& logger() const noexcept { return logger_; }

  void on_event(const Event& e) noexcept override {
    const auto level = e.failed() ? options_.error_level : options_.level;
    if (!logger_->should_log(level)) return;  // the cheap filter: nothing formatted for a dropped line
    try {
      const double ms = static_cast<double>(e.duration.count()) / 1e6;
      if (e.failed()) {
        logger_->log(level, "cairn {} {} subject='{}' tenant='{}' {:.3f}ms in={}B out={}B items={} failed: {}: {}",
                     to_string(e.kind), e.operation, e.subject, e.tenant, ms, e.bytes_in, e.bytes_out, e.items,
                     to_string(e.error), e.message);
      } else {
        logger_->log(level, "cairn {} {} subject='{}' tenant='{}' {:.3f}ms in={}B out={}B items={}", to_string(e.kind),
                     e.operation, e.subject, e.tenant, ms, e.bytes_in, e.bytes_out, e.items);
      }
    } catch (...) {  // NOLINT(bugprone-empty-catch): an observer must not throw (see Observer)
    }
  }

 private:
  std::shared_ptr<spdlog::logger> logger_;
  SpdlogObserverOptions options_;
};

CAIRN_END_NAMESPACE
