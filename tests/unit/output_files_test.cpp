// Outputs never lose a user's file (issue 43): the up-front path check, the staged writer that commits a
// run's outputs together, devices and FIFOs written into, symlinks kept, temporaries gone on a signal.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "../support/message_of.hpp"
#include "../support/temp_dir.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/output_paths.hpp"

namespace shardplan {
namespace {

namespace fs = std::filesystem;
using testing::message_of;
using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(OutputPaths, AnEmptyPathIsBadUsage) {
  EXPECT_EQ(message_of<InputError>([] { check_output_files({{"-o", ""}}, {}); }), "-o: the output path is empty");
}

TEST(OutputPaths, AMissingDirectoryOrAFileAsDirectoryCannotBeWritten) {
  TempDir dir;
  const std::string file = dir.write("afile", "x");
  EXPECT_EQ(message_of<RuntimeFailure>([&] {
              check_output_files({{"-o", file + "/p.json"}}, {});
            }),
            "-o " + file + "/p.json: " + file + " is not a directory");
  const std::string missing = dir.path("nodir/p.json");
  EXPECT_EQ(message_of<RuntimeFailure>([&] {
              check_output_files({{"--report", missing}}, {});
            }),
            "--report " + missing + ": directory " + dir.path("nodir") + " does not exist");
  EXPECT_NE(message_of<RuntimeFailure>([&] {
              check_output_files({{"-o", dir.root().string()}}, {});
            }).find("is a directory"),
            std::string::npos);
}

TEST(OutputPaths, AnOutputThatIsAnInputIsRefusedThroughSymlinks) {
  TempDir dir;
  const std::string tables = dir.write("t.json", "[]");
  fs::create_symlink(tables, dir.path("link.json"));
  for (const std::string& output : {tables, dir.path("link.json"), dir.path("./t.json")}) {
    const std::string message = message_of<InputError>([&] {
      check_output_files({{"-o", output}}, {{"--tables", tables}});
    });
    EXPECT_NE(message.find("the same file as --tables " + tables + ", which this run reads"), std::string::npos)
        << message;
  }
}

TEST(OutputPaths, TwoOutputsThatAreOneFileAreRefused) {
  TempDir dir;
  const std::string message = message_of<InputError>([&] {
    check_output_files({{"-o", dir.path("p.svg")}, {"--report", dir.path("./p.svg")}}, {});
  });
  EXPECT_NE(message.find("--report " + dir.path("./p.svg") + ": the same file as -o"), std::string::npos) << message;
}

TEST(OutputPaths, DirectoryOutputsMayBeCreatedButNotBeAnInput) {
  TempDir dir;
  fs::create_directories(dir.path("model"));
  check_output_directories({{"--out", dir.path("new/deeper")}}, {{"--base", dir.path("model")}});
  EXPECT_NE(message_of<InputError>([&] {
              check_output_directories({{"--out", dir.path("model/")}}, {{"--base", dir.path("model")}});
            }).find("the same file as --base"),
            std::string::npos);
  const std::string file = dir.write("f", "x");
  EXPECT_NE(message_of<RuntimeFailure>([&] {
              check_output_directories({{"--out", file}}, {});
            }).find("is not a directory"),
            std::string::npos);
}

TEST(OutputFiles, NothingAppearsBeforeCommitAndNoTemporaryAfter) {
  TempDir dir;
  {
    OutputFiles outputs;
    outputs.stage(dir.path("plan.json"), "plan");
    outputs.stage(dir.path("plan.svg"), "chart");
    EXPECT_FALSE(fs::exists(dir.path("plan.json")));
    EXPECT_EQ(dir.files().size(), 2u) << "two staged temporaries";
    outputs.commit();
  }
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"plan.json", "plan.svg"}));
  EXPECT_EQ(slurp(dir.path("plan.json")), "plan");
  EXPECT_EQ(slurp(dir.path("plan.svg")), "chart");
}

TEST(OutputFiles, AnOutputThatCannotBeStagedLeavesTheOthersUntouched) {
  TempDir dir;
  const std::string old = dir.write("plan.json", "old plan");
  EXPECT_THROW(
      {
        OutputFiles outputs;
        outputs.stage(old, "new plan");
        outputs.stage(dir.path("nodir/chart.svg"), "chart");
        outputs.commit();
      },
      RuntimeFailure);
  EXPECT_EQ(slurp(old), "old plan");
  EXPECT_EQ(dir.files(), std::vector<std::string>{"plan.json"});
}

TEST(OutputFiles, ASymlinksTargetIsReplacedInItsOwnDirectoryAndTheLinkKept) {
  TempDir dir;
  fs::create_directories(dir.path("real"));
  const std::string target = dir.write("real/plan.json", "old");
  fs::create_symlink("real/plan.json", dir.path("link.json"));
  write_file_atomically(dir.path("link.json"), "new");
  EXPECT_TRUE(fs::is_symlink(dir.path("link.json")));
  EXPECT_EQ(slurp(target), "new");
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"link.json", "real"}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path("real")), fs::directory_iterator()), 1);
}

TEST(OutputFiles, AFifoIsWrittenIntoNotReplaced) {
  TempDir dir;
  const std::string fifo = dir.path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // so that opening it to write does not wait
  ASSERT_GE(reader, 0);
  write_file_atomically(fifo, "through the pipe");
  char buffer[64] = {};
  const ssize_t got = ::read(reader, buffer, sizeof(buffer));
  ::close(reader);
  EXPECT_EQ(std::string(buffer, static_cast<std::size_t>(std::max<ssize_t>(got, 0))), "through the pipe");
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(dir.files(), std::vector<std::string>{"pipe"});
}

// mknod needs root (and a file system that allows device nodes).
bool make_device(const std::string& path, unsigned minor) {
  return ::geteuid() == 0 && ::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
}

TEST(OutputFiles, ACharacterDeviceStaysADevice) {
  TempDir dir;
  const std::string null = dir.path("null");
  const std::string full = dir.path("full");
  if (!make_device(null, 3) || !make_device(full, 7)) GTEST_SKIP() << "mknod needs root";
  write_file_atomically(null, "a plan");
  EXPECT_THROW(write_file_atomically(full, "a plan"), RuntimeFailure);  // ENOSPC, as /dev/full promises
  for (const std::string& device : {null, full}) {
    struct stat st {};
    ASSERT_EQ(::stat(device.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << device;
  }
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"full", "null"}));
}

TEST(OutputFiles, AFatalSignalRemovesStagedTemporaries) {
  TempDir dir;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    OutputFiles outputs;
    outputs.stage(dir.path("plan.json"), std::string(1 << 20, 'x'));
    ::raise(SIGTERM);
    ::_exit(0);  // not reached: SIGTERM ends the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the signal's default action still ends the process";
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(dir.files().empty()) << "a temporary was left: " << dir.files().front();
}

}  // namespace
}  // namespace shardplan
