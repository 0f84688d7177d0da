// cairn — the function bodies of cairn/workflow/state_file.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/version.hpp"
#include "cairn/workflow/state_file.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail::workflow_io {
CAIRN_INLINE void Fd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

CAIRN_INLINE const char* file_kind(mode_t mode) noexcept {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

CAIRN_INLINE FileLock::FileLock(std::filesystem::path path) : path_(std::move(path)) {
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

CAIRN_INLINE bool FileLock::held() const noexcept {
  struct stat mine {};
  struct stat there {};
  return ::fstat(fd_.get(), &mine) == 0 && ::lstat(path_.c_str(), &there) == 0 && mine.st_dev == there.st_dev &&
         mine.st_ino == there.st_ino;
}

}  // namespace detail::workflow_io

CAIRN_INLINE std::optional<WorkflowMachine> StateFile::load() const {
  detail::workflow_io::Fd fd(open_for_reading());
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return std::nullopt;
    struct stat lst {};
    if (::lstat(path_.c_str(), &lst) == 0 && !S_ISREG(lst.st_mode)) refuse_kind(lst.st_mode);
    throw storage_error(
        fmt::format("cannot open workflow state file '{}': {}", path_.string(), detail::workflow_io::errno_text(err)));
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
      throw state_error(fmt::format("workflow state file '{}' is larger than the limit of {} bytes", path_.string(),
                                    limits_.max_bytes));
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
      throw state_error(
          fmt::format("{}: format_version {} is not supported (this cairn reads {})", what, v->dump(), format_version));
    }
  }
  auto machine = WorkflowMachine::from_json(j, root_, what);
  machine.set_state_file_name(file_name_);
  machine.set_observer(observer_);
  return machine;
}

CAIRN_INLINE void StateFile::save(const WorkflowMachine& machine) const {
  detail::workflow_io::FileLock lock(lock_path_);
  write(machine, lock);
}

CAIRN_INLINE StatusReport StateFile::start(const WorkflowTemplate& tmpl,
                                           const std::optional<std::string>& summary) const {
  detail::workflow_io::FileLock lock(lock_path_);
  if (auto existing = load()) return existing->status();
  WorkflowMachine machine(tmpl, root_);
  machine.set_state_file_name(file_name_);
  machine.set_observer(observer_);
  auto status = machine.start(summary);
  write(machine, lock);
  return status;
}

CAIRN_INLINE bool StateFile::is_temp_name(std::string_view name) const {
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

CAIRN_INLINE int StateFile::open_for_reading() const {
  constexpr int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
#ifdef O_NOATIME
  const int fd = ::open(path_.c_str(), flags | O_NOATIME);
  if (fd >= 0 || errno != EPERM) return fd;
#endif
  return ::open(path_.c_str(), flags);
}

CAIRN_INLINE std::string StateFile::random_suffix() {
  std::random_device rd;
  const std::uint64_t v = (static_cast<std::uint64_t>(rd()) << 32) ^ static_cast<std::uint64_t>(rd());
  return fmt::format("{:016x}", v);
}

CAIRN_INLINE void StateFile::remove_stale_temps(int dir_fd) const {
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

CAIRN_INLINE void StateFile::write(const WorkflowMachine& machine, const detail::workflow_io::FileLock& lock) const {
  nlohmann::json j = machine.to_json();
  j["format_version"] = format_version;
  // Invalid UTF-8 in an output becomes U+FFFD rather than an exception after the work was done.
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // What was saved must load: a state past the load limits would lock the workflow out for good.
  if (text.size() > limits_.max_bytes) {
    throw limit_exceeded(
        fmt::format("saving workflow state file '{}': the new state is {} bytes, more than the "
                    "limit of {} bytes that loading accepts; nothing was saved",
                    path_.string(), text.size(), limits_.max_bytes));
  }
  if (const int depth = detail::json_depth(j, limits_.max_depth); depth > limits_.max_depth) {
    throw limit_exceeded(
        fmt::format("saving workflow state file '{}': the new state nests JSON deeper than the "
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
    throw storage_error(
        fmt::format("saving workflow state file '{}': the lock file '{}' was removed or replaced "
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
    on_sync_failure_(
        fmt::format("saving workflow state file '{}': the new state is in place, but fsync of the "
                    "folder '{}' failed: {}; it is not sure to survive a power cut until the next save",
                    path_.string(), folder.string(), detail::workflow_io::errno_text(errno)));
  }
}

CAIRN_END_NAMESPACE
