// cairn — StateFile: a workflow's state in `<workspace>/workflow-state.json`, saved atomically and updated under an
// advisory lock, so a crash never leaves a half-written file and two processes never lose each other's changes.
//
// Saving writes `<file>.tmp` in the same folder, fsyncs it, renames it over the state file and fsyncs the folder:
// after a crash the file holds either the old state or the new one, and once save returns the new one survives a
// power cut. Every write, and every load-modify-save (update), holds an exclusive flock(2) on `<file>.lock`.
// POSIX only.
#pragma once

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/json.hpp"
#include "cairn/error.hpp"
#include "cairn/workflow/machine.hpp"

namespace cairn {

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

/// An exclusive flock(2) on a lock file, held for the object's lifetime. flock locks belong to the open file,
/// so two threads of one process exclude each other just like two processes do.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path) {
    fd_ = Fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (fd_.get() < 0) {
      throw storage_error(fmt::format("cannot open lock file '{}': {}", path.string(), errno_text(errno)));
    }
    while (::flock(fd_.get(), LOCK_EX) != 0) {
      if (errno != EINTR) {
        throw storage_error(fmt::format("cannot lock '{}': {}", path.string(), errno_text(errno)));
      }
    }
  }
  // Closing the descriptor releases the lock.

 private:
  Fd fd_;
};

}  // namespace detail::workflow_io

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
  /// `limits.max_depth` levels of JSON.
  explicit StateFile(std::filesystem::path workspace_root, std::string file_name = default_name,
                     JsonLimits limits = {})
      : root_(std::move(workspace_root)),
        path_(root_ / file_name),
        tmp_path_(root_ / (file_name + ".tmp")),
        lock_path_(root_ / (file_name + ".lock")),
        limits_(limits) {}

  const std::filesystem::path& path() const noexcept { return path_; }
  const std::filesystem::path& workspace_root() const noexcept { return root_; }
  const std::filesystem::path& lock_path() const noexcept { return lock_path_; }

  /// The saved machine, or nullopt when there is no state file (the workflow was never started). A file that
  /// cannot be read as a state (bad JSON, a missing or wrong field, a state that does not fit its template) throws
  /// cairn::state_error naming the file and the problem; nothing is reset. Takes no lock: saves are atomic
  /// renames, so a reader always sees a whole file.
  std::optional<WorkflowMachine> load() const {
    detail::workflow_io::Fd fd(open_for_reading());
    if (fd.get() < 0) {
      if (errno == ENOENT) return std::nullopt;
      throw storage_error(fmt::format("cannot open workflow state file '{}': {}", path_.string(),
                                      detail::workflow_io::errno_text(errno)));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
      throw storage_error(fmt::format("cannot stat '{}': {}", path_.string(), detail::workflow_io::errno_text(errno)));
    }
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
    return WorkflowMachine::from_json(j, root_, what);
  }

  /// Saves `machine` atomically, under the lock. Throws cairn::storage_error on an I/O failure (the previous file
  /// is then untouched) and cairn::state_error for a machine that is not started.
  void save(const WorkflowMachine& machine) const {
    detail::workflow_io::FileLock lock(lock_path_);
    write(machine);
  }

  /// Load-modify-save under the lock: loads the machine (cairn::state_error when the workflow is not started),
  /// calls `f(machine)`, saves, and returns what f returned. When f throws, nothing is saved. `f` must not call
  /// this StateFile again (the lock is not re-entrant).
  template <class F>
  auto update(F&& f) const -> std::invoke_result_t<F, WorkflowMachine&> {
    detail::workflow_io::FileLock lock(lock_path_);
    auto machine = load();
    if (!machine) {
      throw state_error(fmt::format("the workflow is not started: no state file at '{}'", path_.string()));
    }
    if constexpr (std::is_void_v<std::invoke_result_t<F, WorkflowMachine&>>) {
      std::forward<F>(f)(*machine);
      write(*machine);
    } else {
      auto result = std::forward<F>(f)(*machine);
      write(*machine);
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
    auto status = machine.start(summary);
    write(machine);
    return status;
  }

 private:
  [[noreturn]] void io_failure(const char* op) const {
    const int err = errno;
    ::unlink(tmp_path_.c_str());
    throw storage_error(
        fmt::format("saving workflow state file '{}': {} failed: {}", path_.string(), op, detail::workflow_io::errno_text(err)));
  }

  // Reading a file written after its last access updates its atime (relatime), which dirties the inode and makes
  // the next save's fsync commit more; O_NOATIME avoids that where the kernel allows it (the file's owner).
  int open_for_reading() const {
#ifdef O_NOATIME
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOATIME);
    if (fd >= 0 || errno != EPERM) return fd;
#endif
    return ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  }

  // The caller holds the lock, so the temp file is ours alone; one left by a killed writer is simply overwritten.
  void write(const WorkflowMachine& machine) const {
    nlohmann::json j = machine.to_json();
    j["format_version"] = format_version;
    // Invalid UTF-8 in an output becomes U+FFFD rather than an exception after the work was done.
    const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    detail::workflow_io::Fd fd(::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) io_failure("open");
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      const ssize_t n = ::write(fd.get(), p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        io_failure("write");
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) io_failure("fsync");
    if (fd.close() != 0) io_failure("close");
    if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) io_failure("rename");
    detail::workflow_io::Fd dir(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0 || ::fsync(dir.get()) != 0) {
      throw storage_error(fmt::format("saving workflow state file '{}': fsync of the folder failed: {}",
                                      path_.string(), detail::workflow_io::errno_text(errno)));
    }
  }

  std::filesystem::path root_;
  std::filesystem::path path_;
  std::filesystem::path tmp_path_;
  std::filesystem::path lock_path_;
  JsonLimits limits_;
};

}  // namespace cairn
