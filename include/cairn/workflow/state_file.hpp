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
#include "cairn/workflow/machine.hpp"
#include "cairn/version.hpp"

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
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_;
};

/// What a file that is not a regular file is, for error messages.
inline const char* file_kind(mode_t mode) noexcept {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

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

  explicit FileLock(std::filesystem::path path) : path_(std::move(path)) {
    for (int attempt = 0; attempt < max_attempts; ++attempt) {
      fd_ = Fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
      if (fd_.get() < 0) {
        const int err = errno;
        struct stat st {};
        if (::lstat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse(st.st_mode);
        throw storage_error(fmt::format("cannot open lock file '{}': {}", path_.string(), errno_text(err)));
      }
      struct stat st {};
      if (::fstat(fd_.get(), &st) != 0) {
        throw storage_error(fmt::format("cannot stat lock file '{}': {}", path_.string(), errno_text(errno)));
      }
      if (!S_ISREG(st.st_mode)) refuse(st.st_mode);
      while (::flock(fd_.get(), LOCK_EX) != 0) {
        if (errno != EINTR) {
          throw storage_error(fmt::format("cannot lock '{}': {}", path_.string(), errno_text(errno)));
        }
      }
      if (held()) return;
      // The file was removed or replaced while we waited: lock whatever is at the path now.
    }
    throw storage_error(fmt::format("cannot lock '{}': the lock file was replaced {} times in a row while waiting",
                                    path_.string(), max_attempts));
  }
  // Closing the descriptor releases the lock.

  /// True while the locked file is still the one at the lock path (nobody removed or replaced it).
  bool held() const noexcept {
    struct stat mine {};
    struct stat there {};
    return ::fstat(fd_.get(), &mine) == 0 && ::lstat(path_.c_str(), &there) == 0 && mine.st_dev == there.st_dev &&
           mine.st_ino == there.st_ino;
  }

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  [[noreturn]] void refuse(mode_t mode) const {
    throw storage_error(fmt::format("lock file '{}' is {}, not a regular file; cairn neither follows nor uses it "
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
  explicit StateFile(std::filesystem::path workspace_root, std::string file_name = default_name,
                     JsonLimits limits = {})
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
  std::optional<WorkflowMachine> load() const {
    detail::workflow_io::Fd fd(open_for_reading());
    if (fd.get() < 0) {
      const int err = errno;
      if (err == ENOENT) return std::nullopt;
      struct stat lst {};
      if (::lstat(path_.c_str(), &lst) == 0 && !S_ISREG(lst.st_mode)) refuse_kind(lst.st_mode);
      throw storage_error(fmt::format("cannot open workflow state file '{}': {}", path_.string(),
                                      detail::workflow_io::errno_text(err)));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
      throw storage_error(fmt::format("cannot stat '{}': {}", path_.string(), detail::workflow_io::errno_text(errno)));
    }
    if (!S_ISREG(st.st_mode)) refuse_kind(st.st_mode);
    if (static_cast<std::size_t>(st.st_size) > limits_.max_bytes) {
      throw state_error(fmt::format("workflow state file '{}' is {} bytes, more than the limit of {} bytes",
                                    path_.string(), st.st_size, limits_.max_bytes));
    }
    std::string text;
    char buf[65536];
    for (;;) {
      const ssize_t got = ::read(fd.get(), buf, sizeof buf);
      if (got < 0) {
        if (errno == EINTR) continue;
        throw storage_error(fmt::format("cannot read '{}': {}", path_.string(), detail::workflow_io::errno_text(errno)));
      }
      if (got == 0) break;
      text.append(buf, static_cast<std::size_t>(got));
      if (text.size() > limits_.max_bytes) {
        throw state_error(fmt::format("workflow state file '{}' is larger than the limit of {} bytes",
                                      path_.string(), limits_.max_bytes));
      }
    }
    const std::string what = fmt::format("workflow state file '{}'", path_.string());
    nlohmann::json j;
    try {
      j = detail::parse_json(text, limits_, what);
    } catch (const parse_error& e) {
      throw state_error(fmt::format("{} (the file is corrupt; it was left as it is)", e.what()));
    } catch (const limit_exceeded& e) {
      throw state_error(e.what());
    }
    if (j.is_object()) {
      const auto v = j.find("format_version");
      if (v != j.end() && (!v->is_number_integer() || v->get<long long>() != format_version)) {
        throw state_error(fmt::format("{}: format_version {} is not supported (this cairn reads {})", what,
                                      v->dump(), format_version));
      }
    }
    auto machine = WorkflowMachine::from_json(j, root_, what);
    machine.set_state_file_name(file_name_);
    machine.set_observer(observer_);
    return machine;
  }

  /// Saves `machine` atomically, under the lock. Throws cairn::storage_error on an I/O failure and
  /// cairn::limit_exceeded for a state larger or deeper than loading accepts (the previous file is then untouched),
  /// and cairn::state_error for a machine that is not started.
  void save(const WorkflowMachine& machine) const {
    detail::workflow_io::FileLock lock(lock_path_);
    write(machine, lock);
  }

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
  StatusReport start(const WorkflowTemplate& tmpl, const std::optional<std::string>& summary = std::nullopt) const {
    detail::workflow_io::FileLock lock(lock_path_);
    if (auto existing = load()) return existing->status();
    WorkflowMachine machine(tmpl, root_);
    machine.set_state_file_name(file_name_);
    machine.set_observer(observer_);
    auto status = machine.start(summary);
    write(machine, lock);
    return status;
  }

  /// True for a name save() gives its temp files: `<file>.tmp-` and 16 lowercase hex digits (or the fixed
  /// `<file>.tmp` of older versions).
  bool is_temp_name(std::string_view name) const {
    const std::string base = path_.filename().string() + ".tmp";
    if (name == base) return true;
    if (name.size() != base.size() + 1 + temp_suffix_length || name.substr(0, base.size()) != base ||
        name[base.size()] != '-') {
      return false;
    }
    for (char c : name.substr(base.size() + 1)) {
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
  }

 private:
  static constexpr std::size_t temp_suffix_length = 16;

  [[noreturn]] void refuse_kind(mode_t mode) const {
    throw state_error(fmt::format("workflow state file '{}' is {}, not a regular file; cairn neither follows nor "
                                  "reads it (a symlinked state file is refused on purpose)",
                                  path_.string(), detail::workflow_io::file_kind(mode)));
  }

  // Reading a file written after its last access updates its atime (relatime), which dirties the inode and makes
  // the next save's fsync commit more; O_NOATIME avoids that where the kernel allows it (the file's owner).
  // O_NOFOLLOW: a symlink is refused, not followed; O_NONBLOCK: opening a FIFO does not wait for a writer.
  int open_for_reading() const {
    constexpr int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
#ifdef O_NOATIME
    const int fd = ::open(path_.c_str(), flags | O_NOATIME);
    if (fd >= 0 || errno != EPERM) return fd;
#endif
    return ::open(path_.c_str(), flags);
  }

  static std::string random_suffix() {
    std::random_device rd;
    const std::uint64_t v = (static_cast<std::uint64_t>(rd()) << 32) ^ static_cast<std::uint64_t>(rd());
    return fmt::format("{:016x}", v);
  }

  /// Removes temp files a killed writer left. The caller holds the lock, so no live save of this state file owns
  /// one; only names save() makes are touched, and unlinkat never follows a symlink.
  void remove_stale_temps(int dir_fd) const {
    const int dup_fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) return;
    DIR* dir = ::fdopendir(dup_fd);
    if (!dir) {
      ::close(dup_fd);
      return;
    }
    std::vector<std::string> stale;
    while (const dirent* e = ::readdir(dir)) {
      if (is_temp_name(e->d_name)) stale.emplace_back(e->d_name);
    }
    ::closedir(dir);
    for (const auto& name : stale) ::unlinkat(dir_fd, name.c_str(), 0);
  }

  // The caller holds `lock`. Everything before the rename leaves the state file as it was and throws; once the
  // rename succeeded the save has happened, and nothing after it throws.
  void write(const WorkflowMachine& machine, const detail::workflow_io::FileLock& lock) const {
    nlohmann::json j = machine.to_json();
    j["format_version"] = format_version;
    // Invalid UTF-8 in an output becomes U+FFFD rather than an exception after the work was done.
    const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    // What was saved must load: a state past the load limits would lock the workflow out for good.
    if (text.size() > limits_.max_bytes) {
      throw limit_exceeded(fmt::format("saving workflow state file '{}': the new state is {} bytes, more than the "
                                       "limit of {} bytes that loading accepts; nothing was saved",
                                       path_.string(), text.size(), limits_.max_bytes));
    }
    if (const int depth = detail::json_depth(j, limits_.max_depth); depth > limits_.max_depth) {
      throw limit_exceeded(fmt::format("saving workflow state file '{}': the new state nests JSON deeper than the "
                                       "limit of {} levels that loading accepts; nothing was saved",
                                       path_.string(), limits_.max_depth));
    }
    const std::filesystem::path folder = path_.parent_path();
    const std::string base = path_.filename().string();
    detail::workflow_io::Fd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0) io_failure("open of the folder", errno);
    remove_stale_temps(dir.get());

    std::string tmp;
    detail::workflow_io::Fd fd;
    for (int attempt = 0; fd.get() < 0; ++attempt) {
      tmp = base + ".tmp-" + random_suffix();
      fd = detail::workflow_io::Fd(
          ::openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
      if (fd.get() < 0 && (errno != EEXIST || attempt >= 16)) io_failure("open of a temp file", errno);
    }
    auto fail = [&](const char* op) {
      const int err = errno;
      ::unlinkat(dir.get(), tmp.c_str(), 0);
      io_failure(op, err);
    };
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      const ssize_t n = ::write(fd.get(), p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("write");
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) fail("fsync");
    if (fd.close() != 0) fail("close");
    // A lock file removed or replaced while we held it means another writer may hold a lock too: do not commit.
    if (!lock.held()) {
      ::unlinkat(dir.get(), tmp.c_str(), 0);
      throw storage_error(fmt::format("saving workflow state file '{}': the lock file '{}' was removed or replaced "
                                      "while this save held it, so another writer may be at work; nothing was saved",
                                      path_.string(), lock_path_.string()));
    }
    if (::renameat(dir.get(), tmp.c_str(), dir.get(), base.c_str()) != 0) fail("rename");
    // Committed: the new state is in place. A failing folder fsync is retried on EINTR and otherwise told to the
    // sync failure handler; reporting it as a failed save would make a caller apply the same change twice.
    int rc = 0;
    do {
      rc = detail::workflow_io::folder_fsync_for_tests ? detail::workflow_io::folder_fsync_for_tests(dir.get())
                                                      : ::fsync(dir.get());
    } while (rc != 0 && errno == EINTR);
    if (rc != 0 && on_sync_failure_) {
      on_sync_failure_(fmt::format("saving workflow state file '{}': the new state is in place, but fsync of the "
                                   "folder '{}' failed: {}; it is not sure to survive a power cut until the next save",
                                   path_.string(), folder.string(), detail::workflow_io::errno_text(errno)));
    }
  }

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
