#include "shardplan/core/output_paths.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

namespace fs = std::filesystem;

constexpr int kMaxSymlinks = 40;  // as the kernel's own limit (ELOOP)

// The file system does not let the output be written where asked: a runtime failure, as a write that
// fails (exit code 1), only found before any work.
std::string named(const std::string& label, const std::string& path) {
  return label.empty() ? path : label + " " + path;
}

[[noreturn]] void refuse(const std::string& label, const std::string& path, const std::string& why) {
  throw RuntimeFailure(fmt::format("{}: {}", named(label, path), why));
}

// The output would overwrite what the run reads or writes: bad usage (exit code 2).
[[noreturn]] void refuse_usage(const std::string& label, const std::string& path, const std::string& why) {
  throw InputError(fmt::format("{}: {}", named(label, path), why));
}

// What makes two paths the same file: the device and inode when it exists, else where it would be.
struct Identity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string path;

  bool same_as(const Identity& other) const {
    if (exists || other.exists) return exists && other.exists && device == other.device && inode == other.inode;
    return path == other.path;
  }
};

Identity identity_of(const fs::path& path) {
  Identity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.device = st.st_dev;
    id.inode = st.st_ino;
  }
  std::error_code ec;
  id.path = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  return id;
}

std::optional<Identity> standard_output_identity() {
  struct stat st {};
  if (::fstat(STDOUT_FILENO, &st) != 0) return std::nullopt;
  return Identity{true, st.st_dev, st.st_ino, "(standard output)"};
}

bool is_standard_output(const struct stat& st) {
  const std::optional<Identity> out = standard_output_identity();
  return out && out->device == st.st_dev && out->inode == st.st_ino;
}

// The path a chain of symlinks ends at (which need not exist): the file a replacement is written beside.
fs::path follow_symlinks(const std::string& path, const std::string& label) {
  fs::path at = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return at;
    if (hops == kMaxSymlinks) refuse(label, path, fmt::format("more than {} symbolic links to follow", kMaxSymlinks));
    std::error_code ec;
    const fs::path target = fs::read_symlink(at, ec);
    if (ec) refuse(label, path, fmt::format("cannot read the symbolic link {}: {}", at.string(), ec.message()));
    at = target.is_absolute() ? target : at.parent_path() / target;
  }
}

// The closest of `dir` and its parents that exists ("." for a relative path none of whose parents do).
fs::path nearest_existing(fs::path dir, struct stat& st) {
  while (::stat(dir.c_str(), &st) != 0) {
    const fs::path parent = dir.parent_path();
    if (parent.empty() || parent == dir) {
      dir = dir.is_absolute() ? fs::path("/") : fs::path(".");
      ::stat(dir.c_str(), &st);
      break;
    }
    dir = parent;
  }
  return dir;
}

// `dir` must be a directory this process can create files in; `creatable`: or one it can create.
void check_directory(const fs::path& dir, bool creatable, const std::string& label, const std::string& path) {
  struct stat st {};
  const fs::path existing = nearest_existing(dir, st);
  if (!S_ISDIR(st.st_mode)) refuse(label, path, fmt::format("{} is not a directory", existing.string()));
  if (existing != dir && !creatable) refuse(label, path, fmt::format("directory {} does not exist", dir.string()));
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    refuse(label, path, fmt::format("directory {} is not writable: {}", existing.string(), std::strerror(errno)));
  }
}

std::vector<std::pair<const LabelledPath*, Identity>> existing_inputs(const std::vector<LabelledPath>& inputs) {
  std::vector<std::pair<const LabelledPath*, Identity>> out;
  for (const LabelledPath& input : inputs) {
    if (input.path.empty() || input.path == "-") continue;
    Identity id = identity_of(input.path);
    if (id.exists) out.emplace_back(&input, std::move(id));
  }
  return out;
}

void refuse_if_input(const LabelledPath& output, const Identity& id,
                     const std::vector<std::pair<const LabelledPath*, Identity>>& inputs) {
  for (const auto& [input, input_id] : inputs) {
    if (id.same_as(input_id)) {
      refuse_usage(output.label, output.path,
                   fmt::format("the same file as {}, which this run reads; choose another output",
                               named(input->label, input->path)));
    }
  }
}

}  // namespace

OutputTarget resolve_output(const std::string& path, const std::string& label) {
  if (path == "-") return {OutputTarget::Kind::kStandardOutput, {}};
  if (path.empty()) throw InputError(fmt::format("{}: the output path is empty", label.empty() ? "output" : label));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) refuse(label, path, "is a directory");
    if (is_standard_output(st)) return {OutputTarget::Kind::kStandardOutput, {}};
    if (!S_ISREG(st.st_mode)) {
      // A device or FIFO (/dev/null, a named pipe): replacing it would destroy it.
      if (::access(path.c_str(), W_OK) != 0)
        refuse(label, path, fmt::format("cannot be written: {}", std::strerror(errno)));
      return {OutputTarget::Kind::kWriteInto, path};
    }
  }
  const fs::path file = follow_symlinks(path, label);
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  check_directory(dir, /*creatable=*/false, label, path);
  std::error_code ec;
  const fs::path resolved_dir = fs::canonical(dir, ec);
  return {OutputTarget::Kind::kReplace, ec ? file : resolved_dir / file.filename()};
}

void check_output_files(const std::vector<LabelledPath>& outputs, const std::vector<LabelledPath>& inputs) {
  const auto read = existing_inputs(inputs);
  std::vector<std::pair<const LabelledPath*, Identity>> written;
  for (const LabelledPath& output : outputs) {
    const OutputTarget target = resolve_output(output.path, output.label);
    std::optional<Identity> id =
        target.kind == OutputTarget::Kind::kStandardOutput ? standard_output_identity() : identity_of(target.file);
    if (!id) continue;
    refuse_if_input(output, *id, read);
    for (const auto& [other, other_id] : written) {
      if (id->same_as(other_id)) {
        refuse_usage(output.label, output.path,
                     fmt::format("the same file as {}; give each output its own", named(other->label, other->path)));
      }
    }
    written.emplace_back(&output, std::move(*id));
  }
}

void check_output_directories(const std::vector<LabelledPath>& outputs, const std::vector<LabelledPath>& inputs) {
  const auto read = existing_inputs(inputs);
  for (const LabelledPath& output : outputs) {
    if (output.path.empty()) throw InputError(fmt::format("{}: the output path is empty", output.label));
    struct stat st {};
    if (::stat(output.path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
      refuse(output.label, output.path, "is not a directory");
    check_directory(output.path, /*creatable=*/true, output.label, output.path);
    refuse_if_input(output, identity_of(output.path), read);
  }
}

}  // namespace shardplan
