// Changing named namespaces (src/timens/control.h): the request and answer
// messages, malformed ones refused; a request carried out on files; where
// the system's namespaces are; which owners a reader accepts. vclockd's
// side, a real daemon serving real requests, is tests/ns/run.sh's.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "lib/timens_join.h"
#include "timens/control.h"
#include "timens/store.h"

namespace vclock::timens {
namespace {

using namespace std::string_literals;

constexpr std::int64_t s = 1'000'000'000;

std::string decode_error(std::string_view bytes) {
  timens_request r;
  std::string error;
  EXPECT_FALSE(decode_timens_request(bytes, r, error)) << "accepted: " << std::string(bytes);
  return error;
}

TEST(NsControl, RequestsRoundTripWithTheOptionsAsGiven) {
  const timens_request sent{"set", "demo", {"--rate", "2.5", "--realtime=+1d", "--frozen"}};
  std::string error;
  const std::string bytes = encode_timens_request(sent, error);
  ASSERT_FALSE(bytes.empty()) << error;
  EXPECT_EQ(bytes, "vclock-ns/1\0set\0demo\0--rate\0002.5\0--realtime=+1d\0--frozen\0"s);
  timens_request got;
  ASSERT_TRUE(decode_timens_request(bytes, got, error)) << error;
  EXPECT_EQ(got.verb, sent.verb);
  EXPECT_EQ(got.name, sent.name);
  EXPECT_EQ(got.options, sent.options);
}

TEST(NsControl, MalformedRequestsAreRefusedWithAReason) {
  EXPECT_NE(decode_error(""), "");
  EXPECT_NE(decode_error("vclock-ns/1\0set\0demo"s), "");  // the last field not ended
  EXPECT_NE(decode_error("vclock-ns/1\0set\0"s), "");      // no name
  EXPECT_NE(decode_error("vclock-ns/2\0set\0demo\0"s), "");
  EXPECT_EQ(decode_error("vclock-ns/1\0chmod\0demo\0"s), "unknown request 'chmod'");
  std::string huge = "vclock-ns/1\0set\0demo\0"s;
  huge += std::string(timens_message_max, 'x') + '\0';
  EXPECT_NE(decode_error(huge), "");
  std::string error;
  EXPECT_EQ(encode_timens_request({"set", "demo", {std::string(timens_message_max, '1')}}, error),
            "");
  EXPECT_NE(error, "");
  EXPECT_EQ(encode_timens_request({"set", "de\0mo"s, {}}, error), "");
}

TEST(NsControl, AnswersRoundTripAndBadOnesAreRefused) {
  timens_outcome got;
  ASSERT_TRUE(decode_timens_outcome(encode_timens_outcome({0, ""}), got));
  EXPECT_EQ(got.status, 0);
  EXPECT_EQ(got.message, "");
  ASSERT_TRUE(decode_timens_outcome(encode_timens_outcome({2, "vclock: ns set: a\0b"s}), got));
  EXPECT_EQ(got.status, 2);
  EXPECT_EQ(got.message, "vclock: ns set: a b");
  for (const std::string& bad : {""s, "x\0"s, "\0text"s, "256\0"s, "1234\0"s, "1"s, "1\0a\0b"s}) {
    EXPECT_FALSE(decode_timens_outcome(bad, got)) << bad;
  }
  // An answer longer than a message is cut to fit one.
  EXPECT_LE(encode_timens_outcome({1, std::string(3 * timens_message_max, 'e')}).size(),
            timens_message_max);
}

TEST(NsControl, NoDaemonListeningMeansWriteItYourself) {
  timens_outcome o;
  EXPECT_FALSE(ask_vclockd("/nonexistent-vclock-dir/ns.sock", {"rm", "demo", {}}, o));
  EXPECT_FALSE(ask_vclockd("", {"rm", "demo", {}}, o));
}

// A directory of its own for one namespace file, removed at the end.
// A stand-in for vclockd on a socket in a directory of its own: it takes
// one connection and answers it with `answer` (nothing: closes it; "hang":
// reads the request and keeps the connection, unanswered, until the end).
class fake_daemon {
 public:
  explicit fake_daemon(std::string answer) : answer_(std::move(answer)) {
    char tmpl[] = "/tmp/vclock-fake-vclockd-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return;
    dir_ = tmpl;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s/ns.sock", tmpl);
    listening_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (bind(listening_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
        listen(listening_, 1) != 0) {
      return;
    }
    path_ = address.sun_path;
    server_ = std::thread([this] { serve(); });
  }
  ~fake_daemon() {
    if (server_.joinable()) server_.join();
    if (listening_ >= 0) close(listening_);
    if (!path_.empty()) unlink(path_.c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  fake_daemon(const fake_daemon&) = delete;
  fake_daemon& operator=(const fake_daemon&) = delete;
  const std::string& path() const { return path_; }
  // What it was sent: waits for its thread to finish the exchange first.
  const std::string& request() {
    if (server_.joinable()) server_.join();
    return request_;
  }

 private:
  void serve() {
    const int fd = accept4(listening_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    char bytes[timens_message_max + 1];
    const ssize_t n = recv(fd, bytes, sizeof(bytes), 0);
    if (n > 0) request_.assign(bytes, static_cast<std::size_t>(n));
    if (answer_ == "hang") {
      // Until the asker gives up and closes its end.
      while (recv(fd, bytes, sizeof(bytes), 0) > 0) {
      }
    } else if (!answer_.empty()) {
      send(fd, answer_.data(), answer_.size(), MSG_NOSIGNAL);
    }
    close(fd);
  }

  std::string answer_;
  std::string dir_, path_, request_;
  int listening_ = -1;
  std::thread server_;
};

TEST(NsControl, TheAskerSaysWhatTheDaemonAnsweredOrDidNot) {
  const timens_request r{"set", "demo", {"--rate", "2"}};
  {
    fake_daemon d(encode_timens_outcome({1, "vclock ns set: demo: no such namespace"}));
    ASSERT_FALSE(d.path().empty());
    timens_outcome o;
    ASSERT_TRUE(ask_vclockd(d.path(), r, o));
    EXPECT_EQ(o.status, 1);
    EXPECT_EQ(o.message, "vclock ns set: demo: no such namespace");
    timens_request seen;
    std::string error;
    ASSERT_TRUE(decode_timens_request(d.request(), seen, error)) << error;
    EXPECT_EQ(seen.options, r.options);
  }
  {
    fake_daemon d("");  // closes without a word
    timens_outcome o;
    ASSERT_TRUE(ask_vclockd(d.path(), r, o));
    EXPECT_EQ(o.status, 1);
    EXPECT_NE(o.message.find("gave no well-formed answer"), std::string::npos) << o.message;
  }
  {
    fake_daemon d("999\0nonsense"s);
    timens_outcome o;
    ASSERT_TRUE(ask_vclockd(d.path(), r, o));
    EXPECT_EQ(o.status, 1);
    EXPECT_NE(o.message.find("gave no well-formed answer"), std::string::npos) << o.message;
  }
  {
    // A stopped daemon: the asker waits, then says so, and does not write
    // the file in its stead.
    fake_daemon d("hang");
    timens_outcome o;
    ASSERT_TRUE(ask_vclockd(d.path(), r, o, 200));
    EXPECT_EQ(o.status, 1);
    EXPECT_NE(o.message.find("did not answer within 0.2 s"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("'vclock ns show demo' tells"), std::string::npos) << o.message;
  }
}

class scratch_namespace {
 public:
  scratch_namespace() {
    char tmpl[] = "/tmp/vclock-ns-apply-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  }
  ~scratch_namespace() {
    unlink(path().c_str());
    rmdir(dir_.c_str());
  }
  scratch_namespace(const scratch_namespace&) = delete;
  scratch_namespace& operator=(const scratch_namespace&) = delete;
  bool made() const { return !dir_.empty(); }
  std::string path() const { return dir_ + "/demo"; }

 private:
  std::string dir_;
};

TEST(NsApply, CreateSetAndRemoveAsTheCliWould) {
  const scratch_namespace scratch;
  ASSERT_TRUE(scratch.made());
  const auto path = [&scratch] { return scratch.path(); };
  timens_outcome o = apply_timens_request({"create", "demo", {"--realtime", "+1d"}}, path());
  ASSERT_EQ(o.status, 0) << o.message;
  ns_header header{};
  ns_params p{};
  std::string error;
  ASSERT_TRUE(read_timens_file(path(), header, p, error)) << error;
  EXPECT_STREQ(header.name, "demo");
  EXPECT_NEAR(static_cast<double>(p.offset_realtime_ns), 86400.0 * s, 0.1 * s);
  EXPECT_EQ(p.generation, 1u);

  o = apply_timens_request({"create", "demo", {}}, path());
  EXPECT_EQ(o.status, 1);
  EXPECT_NE(o.message.find("exists"), std::string::npos) << o.message;

  o = apply_timens_request({"set", "demo", {"--rate=2"}}, path());
  ASSERT_EQ(o.status, 0) << o.message;
  ASSERT_TRUE(read_timens_file(path(), header, p, error)) << error;
  EXPECT_EQ(p.generation, 2u);
  EXPECT_EQ(p.rate_running_q32, 2 * rate_one_q32);

  // Usage errors: what the CLI would have refused before sending.
  o = apply_timens_request({"set", "demo", {}}, path());
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.message, "vclock: ns set: nothing to change (see vclock ns --help)");
  o = apply_timens_request({"set", "demo", {"--rate", "0"}}, path());
  EXPECT_EQ(o.status, 2) << o.message;
  o = apply_timens_request({"set", "demo", {"--chmod"}}, path());
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.message, "vclock: ns set: unexpected argument '--chmod'");
  o = apply_timens_request({"rm", "demo", {"--frozen"}}, path());
  EXPECT_EQ(o.status, 2);
  o = apply_timens_request({"set", "demo", {"--allow-backward", "--monotonic", "-1h"}}, path());
  EXPECT_EQ(o.status, 0) << o.message;
  o = apply_timens_request({"set", "demo", {"--monotonic", "-1h"}}, path());
  EXPECT_EQ(o.status, 1);
  EXPECT_NE(o.message.find("would step back"), std::string::npos) << o.message;

  o = apply_timens_request({"rm", "demo", {}}, path());
  EXPECT_EQ(o.status, 0) << o.message;
  o = apply_timens_request({"rm", "demo", {}}, path());
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.message, "vclock ns rm: " + path() + ": no such namespace");
}

// Restores VCLOCK_PAGE when the test ends.
class page_variable {
 public:
  page_variable() {
    const char* v = std::getenv("VCLOCK_PAGE");
    had_ = v != nullptr;
    if (had_) old_ = v;
  }
  ~page_variable() {
    if (had_) {
      setenv("VCLOCK_PAGE", old_.c_str(), 1);
    } else {
      unsetenv("VCLOCK_PAGE");
    }
  }
  page_variable(const page_variable&) = delete;
  page_variable& operator=(const page_variable&) = delete;

 private:
  bool had_ = false;
  std::string old_;
};

TEST(NsDirectory, TheSystemsNamespacesAreBesideTheHostPage) {
  page_variable restore;
  unsetenv("VCLOCK_PAGE");
  EXPECT_EQ(system_timens_directory(), "/run/vclock/ns");
  EXPECT_EQ(timens_control_socket(), "/run/vclock/ns.sock");
  setenv("VCLOCK_PAGE", "/srv/clock/page", 1);
  EXPECT_EQ(system_timens_directory(), "/srv/clock/ns");
  EXPECT_EQ(timens_control_socket(), "/srv/clock/ns.sock");
  EXPECT_EQ(timens_file_of("demo"), "/srv/clock/ns/demo");
  EXPECT_EQ(timens_file_of("/elsewhere/x"), "/elsewhere/x");
  EXPECT_EQ(timens_file_of("../x"), "");
  setenv("VCLOCK_PAGE", "/page", 1);
  EXPECT_EQ(system_timens_directory(), "/ns");
  for (const char* not_a_path : {"off", "relative/page", ""}) {
    setenv("VCLOCK_PAGE", not_a_path, 1);
    EXPECT_EQ(system_timens_directory(), "/run/vclock/ns") << not_a_path;
  }
  // Longer than any buffer: no directory at all, never a cut one.
  setenv("VCLOCK_PAGE", ("/" + std::string(1000, 'd') + "/page").c_str(), 1);
  EXPECT_EQ(system_timens_directory(), "");
  EXPECT_EQ(timens_file_of("demo"), "");
}

struct stat file_of(uid_t owner, mode_t mode) {
  struct stat st {};
  st.st_uid = owner;
  st.st_mode = mode;
  st.st_size = static_cast<off_t>(ns_page_bytes);
  return st;
}

TEST(NsOwners, RootThisUserOrTheOwnerOfAClosedDirectory) {
  const uid_t me = 1000, daemon = 999, other = 1234;
  const struct stat daemon_dir = file_of(daemon, S_IFDIR | 0755);
  const struct stat loose_dir = file_of(daemon, S_IFDIR | 0775);
  const struct stat sticky_dir = file_of(0, S_IFDIR | 01777);
  EXPECT_EQ(check_timens_file(file_of(0, S_IFREG | 0644), sticky_dir, me), timens_refusal::none);
  EXPECT_EQ(check_timens_file(file_of(me, S_IFREG | 0644), sticky_dir, me), timens_refusal::none);
  EXPECT_EQ(check_timens_file(file_of(daemon, S_IFREG | 0644), daemon_dir, me),
            timens_refusal::none);
  EXPECT_EQ(check_timens_file(file_of(daemon, S_IFREG | 0644), loose_dir, me),
            timens_refusal::loose_directory);
  EXPECT_EQ(check_timens_file(file_of(other, S_IFREG | 0644), daemon_dir, me),
            timens_refusal::foreign_owner);
  EXPECT_EQ(check_timens_file(file_of(other, S_IFREG | 0644), sticky_dir, me),
            timens_refusal::foreign_owner);
  EXPECT_EQ(check_timens_file(file_of(daemon, S_IFREG | 0664), daemon_dir, me),
            timens_refusal::loose_mode);
  EXPECT_EQ(check_timens_file(file_of(daemon, S_IFDIR | 0755), daemon_dir, me),
            timens_refusal::not_regular);
}

}  // namespace
}  // namespace vclock::timens
