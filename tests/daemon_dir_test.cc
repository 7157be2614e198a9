// Issue 21: vclockd and its page's directory, as a real process (started and stopped by pid):
// a missing directory is created (0755, this user's) and the page published in it; an existing
// one that others can write, which vclockd did not make, is refused with one line and exit 1.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "support/daemon_process.h"
#include "support/emulation.h"

namespace {

using namespace std::chrono_literals;
using vclock::test::daemon_process;
using vclock::test::temp_dir;

std::size_t count_lines(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n' ? 1 : 0;
  return n;
}

TEST(DaemonDirectory, MissingDirectoryIsCreatedAndThePagePublished) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  temp_dir dir;
  ASSERT_FALSE(dir.path().empty());
  // Two levels missing, as /run/vclock on a system whose /run lacks both would be.
  const std::string run_dir = dir.file("run");
  const std::string page_dir = run_dir + "/vclock";
  const std::string page_path = page_dir + "/page";
  const mode_t old_mask = umask(077);  // vclockd sets 0755 whatever the umask
  daemon_process d(VCLOCKD_PATH, {"--page", page_path, "--realtime", "off"}, dir.path());
  umask(old_mask);
  ASSERT_TRUE(d.wait_for_notification("READY=1", 30s)) << d.log();
  for (const std::string& made : {run_dir, page_dir}) {
    struct stat st {};
    ASSERT_EQ(stat(made.c_str(), &st), 0) << made;
    EXPECT_TRUE(S_ISDIR(st.st_mode)) << made;
    EXPECT_EQ(st.st_mode & 07777, 0755u) << made;
    EXPECT_EQ(st.st_uid, geteuid()) << made;
  }
  struct stat page_st {};
  ASSERT_EQ(stat(page_path.c_str(), &page_st), 0);
  EXPECT_EQ(page_st.st_mode & 07777, 0644u);
  EXPECT_NE(d.log().find("created " + page_dir), std::string::npos) << d.log();
  const int status = d.stop();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << d.log();
}

// World-writable (with or without the sticky bit) or group-writable: whoever can write it
// could replace the page under every reader.
TEST(DaemonDirectory, DirectoryOthersCanWriteIsRefused) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  for (const mode_t mode : {mode_t{0777}, mode_t{01777}, mode_t{0775}}) {
    temp_dir dir;
    ASSERT_FALSE(dir.path().empty());
    const std::string open_dir = dir.file("open");
    ASSERT_EQ(mkdir(open_dir.c_str(), 0700), 0);
    ASSERT_EQ(chmod(open_dir.c_str(), mode), 0);
    const std::string page_path = open_dir + "/page";
    daemon_process d(VCLOCKD_PATH, {"--page", page_path, "--realtime", "off"}, dir.path());
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!d.has_exited() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_TRUE(d.has_exited()) << "vclockd serves a directory of mode " << std::oct << mode
                                << ":\n"
                                << d.log();
    const int status = d.stop();  // the wait status it exited with
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 1) << d.log();
    const std::string log = d.log();
    EXPECT_EQ(count_lines(log), 1u) << log;
    EXPECT_NE(log.find("others can write"), std::string::npos) << log;
    EXPECT_NE(access(page_path.c_str(), F_OK), 0) << "a page was created in " << open_dir;
  }
}

}  // namespace
