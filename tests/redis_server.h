// A redis-server of a test's or benchmark's own: on 127.0.0.1 and a free port, in a temporary
// directory, without persistence; stopped when the object goes. available() is false when the
// binary is not installed (tools/deps.sh installs it).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fstream>

#include "jit/runtime/remote_cache.h"
#include "tests/unit/test_util.h"

namespace primjit::test {

namespace fs = std::filesystem;

inline int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(s);
  return ntohs(addr.sin_port);
}

// A redis-server of this test's own, on 127.0.0.1 and a free port, without persistence.
class RedisServer {
 public:
  RedisServer() : port_(free_port()) {
    for (const char* candidate : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
      if (fs::exists(candidate)) binary_ = candidate;
    }
    if (binary_.empty()) return;
    std::vector<std::string> args = {binary_,  "--port",       std::to_string(port_),
                                     "--bind", "127.0.0.1",    "--save",
                                     "",       "--appendonly", "no",
                                     "--dir",  dir_.str(),     "--daemonize",
                                     "no",     "--logfile",    dir_.str() + "/redis.log"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // fork + exec rather than posix_spawn: the server must die with this process (a crashed
    // test must not leave it running) and must not hold this process's output pipes.
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      int null = ::open("/dev/null", O_RDWR);
      for (int fd : {0, 1, 2}) ::dup2(null, fd);
      ::execv(binary_.c_str(), argv.data());
      ::_exit(127);
    }
    if (pid_ < 0) pid_ = 0;
    for (int i = 0; i < 200 && pid_ != 0 && !ping(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  ~RedisServer() { stop(SIGTERM); }

  bool available() const { return pid_ != 0; }
  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  void stop(int signal) {
    if (pid_ == 0) return;
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = 0;
  }
  // Runs a command on the server directly (the tests play an attacker with write access).
  std::string command(const std::vector<std::string>& args) {
    redisContext* c = redisConnect("127.0.0.1", port_);
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    auto* reply = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data()));
    std::string out;
    if (reply != nullptr) {
      if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
        out.assign(reply->str, reply->len);
      } else if (reply->type == REDIS_REPLY_INTEGER) {
        out = std::to_string(reply->integer);
      }
      freeReplyObject(reply);
    }
    redisFree(c);
    return out;
  }

 private:
  bool ping() {
    redisContext* c = redisConnect("127.0.0.1", port_);
    bool ok = c != nullptr && c->err == 0;
    if (ok) {
      auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
      ok = reply != nullptr && reply->type == REDIS_REPLY_STATUS;
      if (reply != nullptr) freeReplyObject(reply);
    }
    if (c != nullptr) redisFree(c);
    return ok;
  }

  TempDir dir_{"primjit_redis"};
  int port_;
  std::string binary_;
  pid_t pid_ = 0;
};

// A team key pair in `dir`: "team" (writers, 0600) and "team.pub" (readers).
struct TeamKeyFiles {
  std::string writer, reader;
  explicit TeamKeyFiles(const TempDir& dir) {
    std::string w, r;
    jit::TeamKey::generate(&w, &r);
    writer = dir.str() + "/team";
    reader = writer + ".pub";
    std::ofstream(writer) << w;
    std::ofstream(reader) << r;
    fs::permissions(writer, fs::perms::owner_read | fs::perms::owner_write);
  }
};

}  // namespace primjit::test
