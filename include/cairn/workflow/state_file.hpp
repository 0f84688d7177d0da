// cairn — StateFile: a workflow's state in `<workspace>/workflow-state.json`, saved atomically and updated under an
// advisory lock, so a crash never leaves a half-written file and two processes never lose each other's changes.
//
// Saving writes a fresh temp file `<file>.tmp-<16 random hex digits>` in the same folder (created O_EXCL|O_NOFOLLOW,
// so nothing planted there is ever written through), fsyncs it, renames it over the state file and fsyncs the
// folder: after a crash the file holds either the old state or the new one. Every write, and every
// load-modify-save (update), holds an exclusive flock(2) on `<file>.lock`. The state file and the lock must be
// regular files: a symlink, FIFO or device there is refused with an error, never followed or waited on.
// POSIX only.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/json.hpp"
#include "cairn/error.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/version.hpp"
#include "cairn/workflow/machine.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail::workflow_io {

inline std::string errno_text(int err) { return std::strerror(err); }

/// An open file descriptor, closed on destruction.
class Fd {
 public:
  explicit Fd(int fd = -1) noexcept : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const noexcept { return fd_; }
  /// Closes now and reports close(2)'s result (it can report a failed write-back).
  int close() noexcept { return ::close(std::exchange(fd_, -1)); }

 private:
  void reset() noexcept;
  int fd_;
};

/// What a file that is not a regular file is, for error messages.
const char* file_kind(mode_t mode) noexcept;

/// A seam for tests only: when set, it is called instead of fsync(2) on the folder after the rename of a save (a
/// test makes it fail to see how a save reports a folder fsync that fails after the new state is in place).
inline thread_local int (*folder_fsync_for_tests)(int fd) = nullptr;

/// An exclusive flock(2) on a lock file, held for the object's lifetime. flock locks belong to the open file,
/// so two threads of one process exclude each other just like two processes do.
///
/// The lock file is opened without following a symlink and must be a regular file. A lock file removed (or
/// replaced) while someone waited on it would let two writers each lock a different file, so after flock the
/// locked file must still be the one at the path (same device and inode), else it is locked again.
class FileLock {
 public:
  static constexpr int max_attempts = 100;

  explicit FileLock(std::filesystem::path path);
  // Closing the descriptor releases the lock.

  /// True while the locked file is still the one at the lock path (nobody removed or replaced it).
  bool held() const noexcept;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  [[noreturn]] void refuse(mode_t mode) const {
    throw storage_error(
        fmt::format("lock file '{}' is {}, not a regular file; cairn neither follows nor uses it "
                    "(remove it)",
                    path_.string(), file_kind(mode)));
  }

  std::filesystem::path path_;
  Fd fd_;
};

}  // namespace detail::workflow_io

/// Told when a save put the new state in place (the rename succeeded) but the fsync of the folder failed: the change
/// happened and every reader sees it, only its survival of a power cut is not confirmed until the next save.
using SyncFailureHandler = std::function<void(const std::string& message)>;

/// The state file of one workspace. Thread-safe and process-safe: every method that writes takes the file lock.
///
///     cairn::StateFile file("/path/to/workspace");
///     file.start(tmpl, "Add CSV export");
///     file.update([](cairn::WorkflowMachine& m) { return m.advance("Plan written"); });
class StateFile {
 public:
  static constexpr const char* default_name = "workflow-state.json";
  static constexpr int format_version = 1;

  /// The state file `<workspace_root>/<file_name>`. Loading reads at most `limits.max_bytes` bytes and
  /// `limits.max_depth` levels of JSON; saving refuses a state that loading would refuse.
  explicit StateFile(std::filesystem::path workspace_root, std::string file_name = default_name, JsonLimits limits = {})
      : root_(std::move(workspace_root)),
        file_name_(std::move(file_name)),
        path_(root_ / file_name_),
        lock_path_(root_ / (file_name_ + ".lock")),
        limits_(limits) {}

  const std::filesystem::path& path() const noexcept { return path_; }
  const std::filesystem::path& workspace_root() const noexcept { return root_; }
  const std::filesystem::path& lock_path() const noexcept { return lock_path_; }

  /// Sets the event observer of every machine this StateFile loads or starts (docs/observe.md): workflow_transition
  /// and artifact_registered events. Set it before sharing the StateFile; copies share the observer. Events from
  /// update() and start() arrive while the state file's lock is held: the observer must not call this StateFile.
  void set_observer(std::shared_ptr<Observer> observer) { observer_ = std::move(observer); }

  /// Called when a save's folder fsync fails after the rename (see SyncFailureHandler); by default nothing is told.
  void on_sync_failure(SyncFailureHandler handler) { on_sync_failure_ = std::move(handler); }

  /// The saved machine, or nullopt when there is no state file (the workflow was never started). A file that
  /// cannot be read as a state (bad JSON, a missing or wrong field, a state that does not fit its template) throws
  /// cairn::state_error naming the file and the problem; nothing is reset. So does anything at the path that is not
  /// a regular file (a symlink is not followed, a FIFO is not waited on). Takes no lock: saves are atomic renames,
  /// so a reader always sees a whole file.
  std::optional<WorkflowMachine> load() const;

  /// Saves `machine` atomically, under the lock. Throws cairn::storage_error on an I/O failure and
  /// cairn::limit_exceeded for a state larger or deeper than loading accepts (the previous file is then untouched),
  /// and cairn::state_error for a machine that is not started.
  void save(const WorkflowMachine& machine) const;

  /// Load-modify-save under the lock: loads the machine (cairn::state_error when the workflow is not started),
  /// calls `f(machine)`, saves, and returns what f returned. When f throws, or the save fails, nothing is saved:
  /// an exception means the state file is as it was. `f` must not call this StateFile again (the lock is not
  /// re-entrant).
  template <class F>
  auto update(F&& f) const -> std::invoke_result_t<F, WorkflowMachine&> {
    detail::workflow_io::FileLock lock(lock_path_);
    auto machine = load();
    if (!machine) {
      throw state_error(fmt::format("the workflow is not started: no state file at '{}'", path_.string()));
    }
    if constexpr (std::is_void_v<std::invoke_result_t<F, WorkflowMachine&>>) {
      std::forward<F>(f)(*machine);
      write(*machine, lock);
    } else {
      auto result = std::forward<F>(f)(*machine);
      write(*machine, lock);
      return result;
    }
  }

  /// Calls `f` on the saved machine, read under the lock (so the read is ordered after any update in progress),
  /// and returns its result; nullopt when the workflow is not started.
  template <class F>
  auto read(F&& f) const -> std::optional<std::invoke_result_t<F, const WorkflowMachine&>> {
    detail::workflow_io::FileLock lock(lock_path_);
    auto machine = load();
    if (!machine) return std::nullopt;
    return std::forward<F>(f)(static_cast<const WorkflowMachine&>(*machine));
  }

  /// Starts `tmpl` and saves it, unless a state file exists: then the saved workflow (with the template it was
  /// started with) is left as it is and its status returned.
  StatusReport start(const WorkflowTemplate& tmpl, const std::optional<std::string>& summary = std::nullopt) const;

  /// True for a name save() gives its temp files: `<file>.tmp-` and 16 lowercase hex digits (or the fixed
  /// `<file>.tmp` of older versions).
  bool is_temp_name(std::string_view name) const;

 private:
  static constexpr std::size_t temp_suffix_length = 16;

  [[noreturn]] void refuse_kind(mode_t mode) const {
    throw state_error(
        fmt::format("workflow state file '{}' is {}, not a regular file; cairn neither follows nor "
                    "reads it (a symlinked state file is refused on purpose)",
                    path_.string(), detail::workflow_io::file_kind(mode)));
  }

  // Reading a file written after its last access updates its atime (relatime), which dirties the inode and makes
  // the next save's fsync commit more; O_NOATIME avoids that where the kernel allows it (the file's owner).
  // O_NOFOLLOW: a symlink is refused, not followed; O_NONBLOCK: opening a FIFO does not wait for a writer.
  int open_for_reading() const;

  static std::string random_suffix();

  /// Removes temp files a killed writer left. The caller holds the lock, so no live save of this state file owns
  /// one; only names save() makes are touched, and unlinkat never follows a symlink.
  void remove_stale_temps(int dir_fd) const;

  // The caller holds `lock`. Everything before the rename leaves the state file as it was and throws; once the
  // rename succeeded the save has happened, and nothing after it throws.
  void write(const WorkflowMachine& machine, const detail::workflow_io::FileLock& lock) const;

  [[noreturn]] void io_failure(const char* op, int err) const {
    throw storage_error(fmt::format("saving workflow state file '{}': {} failed: {}", path_.string(), op,
                                    detail::workflow_io::errno_text(err)));
  }

  std::filesystem::path root_;
  std::string file_name_;
  std::filesystem::path path_;
  std::filesystem::path lock_path_;
  JsonLimits limits_;
  SyncFailureHandler on_sync_failure_;
  std::shared_ptr<Observer> observer_;
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/workflow/state_file-inl.hpp"
#endif
