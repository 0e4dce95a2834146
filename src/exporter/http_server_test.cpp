// The exporter's HTTP endpoint under hostile clients (issue: bodies buffered, headers
// unbounded, slow clients blocking scrapes). Raw sockets, so that each abuse is exact.
#include "exporter/http_server.h"
#include "exporter/test_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace gpuscope::exporter {
namespace {

using Clock = std::chrono::steady_clock;

int connect_to(int port) { return testing::connect_to(port); }

// Reads until the peer closes or `timeout_ms` passes.
std::string read_all(int fd, int timeout_ms) {
  std::string out;
  const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string exchange(int port, const std::string& request, int timeout_ms = 2000) {
  int fd = connect_to(port);
  if (fd < 0) return "connect failed";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string r = read_all(fd, timeout_ms);
  close(fd);
  return r;
}

struct Served {
  explicit Served(HttpLimits limits = {}) : server(handler(), limits) {
    EXPECT_TRUE(server.bind("127.0.0.1", 0).ok());
    server.start();
  }
  static HttpHandler handler() {
    auto body = std::make_shared<const std::string>("metric 1\n");
    return [body](const HttpRequest& r) {
      HttpResponse res;
      if (r.path == "/metrics")
        res.body = body;
      else
        res.status = 404;
      return res;
    };
  }
  HttpServer server;
};

TEST(HttpServer, AnswersGetHeadAndKeepsAlive) {
  Served s;
  std::string r = exchange(s.server.port(),
                           "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"
                           "HEAD /metrics HTTP/1.1\r\n\r\n"
                           "GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Length: 9\r\nConnection: keep-alive\r\n\r\nmetric 1\nHTTP/1.1 200 OK"), std::string::npos)
      << r;
  EXPECT_NE(r.find("HTTP/1.1 404 Not Found"), std::string::npos) << r;
  EXPECT_EQ(r.find("metric 1\n", r.find("metric 1\n") + 1), std::string::npos);  // HEAD: no body.
}

// A 200 MB POST (even to a 404 path) is refused from its head: the answer comes without a
// byte of the body sent, so nothing was buffered.
TEST(HttpServer, RefusesBodiesBeforeReadingThem) {
  Served s;
  for (const char* head : {"POST /nope HTTP/1.1\r\nContent-Length: 209715200\r\n\r\n",
                           "POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                           "GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\n"}) {
    const auto t0 = Clock::now();
    std::string r = exchange(s.server.port(), head, 3000);
    EXPECT_EQ(r.rfind("HTTP/1.1 413 ", 0), 0u) << head << r;
    EXPECT_NE(r.find("Connection: close"), std::string::npos);
    EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(2500));
  }
  std::string r = exchange(s.server.port(), "DELETE /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 405 ", 0), 0u) << r;
}

// While a client streams a body after the refusal, the server discards it unbuffered for a
// bounded amount, then closes.
TEST(HttpServer, DiscardsAStreamedBodyWithinTheLingerBound) {
  HttpLimits limits;
  limits.linger_bytes = 1 << 20;
  Served s(limits);
  int fd = connect_to(s.server.port());
  timeval tv{3, 0};  // Never hang here if the server stopped reading without closing.
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string head = "POST /x HTTP/1.1\r\nContent-Length: 209715200\r\n\r\n";
  send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  std::string chunk(64 * 1024, 'a');
  size_t sent = 0;
  for (int i = 0; i < 3200; ++i) {  // Up to 200 MB; the server closes long before.
    ssize_t n = send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  close(fd);
  EXPECT_LT(sent, size_t{64} << 20) << "the server kept reading the body";
}

TEST(HttpServer, BoundsHeaderCountAndSize) {
  Served s;
  std::string many = "GET /metrics HTTP/1.1\r\n";
  for (int i = 0; i < 200; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  many += "\r\n";
  EXPECT_EQ(exchange(s.server.port(), many).rfind("HTTP/1.1 431 ", 0), 0u);
  std::string big = "GET /metrics HTTP/1.1\r\nX-Big: " + std::string(20000, 'b') + "\r\n\r\n";
  EXPECT_EQ(exchange(s.server.port(), big).rfind("HTTP/1.1 431 ", 0), 0u);
  std::string ok = "GET /metrics HTTP/1.1\r\n";
  for (int i = 0; i < 50; ++i) ok += "X-H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(exchange(s.server.port(), ok + "\r\n").rfind("HTTP/1.1 200 ", 0), 0u);
}

// 16 slowloris clients (a header line every 100 ms, never finishing) neither block scrapes
// nor live past the head timeout.
TEST(HttpServer, SlowClientsDoNotBlockScrapesAndAreCutOff) {
  HttpLimits limits;
  limits.head_timeout_ns = 600'000'000;
  Served s(limits);
  std::vector<int> slow;
  for (int i = 0; i < 16; ++i) {
    slow.push_back(connect_to(s.server.port()));
    send(slow.back(), "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);
  }
  std::vector<double> scrape_ms;
  const auto t0 = Clock::now();
  while (Clock::now() - t0 < std::chrono::milliseconds(1200)) {
    for (int fd : slow) send(fd, "X-A: b\r\n", 8, MSG_NOSIGNAL);
    const auto a = Clock::now();
    std::string r = exchange(s.server.port(), "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    scrape_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
    EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << r;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (double ms : scrape_ms) EXPECT_LT(ms, 200.0);
  for (int fd : slow) {
    std::string r = read_all(fd, 1500);
    EXPECT_EQ(r.rfind("HTTP/1.1 408 ", 0), 0u) << r;
    close(fd);
  }
}

// `count` scrapes, one after another, each answered 200 within a second.
void expect_scrapes_served(int port, int count) {
  for (int i = 0; i < count; ++i) {
    const auto a = Clock::now();
    std::string r = exchange(port, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n", 1000);
    EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << r;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - a).count(), 1.0);
  }
}

TEST(HttpServer, IdleClientsBeyondTheConnectionLimitDoNotLockScrapesOut) {
  // Clients that connect and wait used to fill max_connections; every later connection, the
  // scrape's included, was closed at once. Now the newcomer takes the oldest idle one's place.
  HttpLimits limits;
  limits.max_connections = 8;
  Served s(limits);
  std::vector<int> idle;
  for (int i = 0; i < 32; ++i) idle.push_back(connect_to(s.server.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  expect_scrapes_served(s.server.port(), 5);
  for (int fd : idle) close(fd);
}

TEST(HttpServer, ScrapesAreServedWhenDescriptorsRunOut) {
  // At the descriptor limit accept failed with EMFILE, the event loop spun and scrapes stalled.
  // The server runs in a child process at a limit of 300 descriptors, 200 of which the rest of
  // that process holds; 400 idle clients (this process) then leave it none to accept with.
  int port_pipe[2];
  ASSERT_EQ(pipe(port_pipe), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit low{};
    getrlimit(RLIMIT_NOFILE, &low);
    low.rlim_cur = 300;
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) _exit(1);
    Served s;
    const int port = s.server.port();
    for (int i = 0; i < 200; ++i) open("/dev/null", O_RDONLY);
    if (write(port_pipe[1], &port, sizeof port) != sizeof port) _exit(1);
    pause();
    _exit(0);
  }
  close(port_pipe[1]);
  int port = 0;
  ASSERT_EQ(read(port_pipe[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  close(port_pipe[0]);
  std::vector<int> idle;
  for (int i = 0; i < 400; ++i) idle.push_back(connect_to(port));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  expect_scrapes_served(port, 3);
  for (int fd : idle) close(fd);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(HttpServer, BindErrorsAndEveryInterface) {
  Served a;
  HttpServer b(Served::handler());
  Status st = b.bind("127.0.0.1", a.server.port());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot listen on 127.0.0.1:"), std::string::npos) << st.message();
  HttpServer any(Served::handler());
  ASSERT_TRUE(any.bind("", 0).ok());
  any.start();
  EXPECT_TRUE(any.bound_address().rfind("[::]:", 0) == 0 || any.bound_address().rfind("0.0.0.0:", 0) == 0)
      << any.bound_address();
  EXPECT_EQ(exchange(any.port(), "GET /metrics HTTP/1.1\r\n\r\n", 500).rfind("HTTP/1.1 200 ", 0), 0u);
}

TEST(HttpServer, LoopbackHosts) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "localhost", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(is_loopback_host(h)) << h;
  }
  for (const char* h : {"", "0.0.0.0", "::", "10.0.0.1", "192.168.1.2"}) {
    EXPECT_FALSE(is_loopback_host(h)) << h;
  }
}

}  // namespace
}  // namespace gpuscope::exporter
