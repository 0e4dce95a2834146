#include "exporter/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/core.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "core/clock.h"
#include "exporter/basic_auth.h"
#include "exporter/http_request.h"
#include "exporter/tls.h"

namespace gpuscope::exporter {

namespace {

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

struct Connection {
  // kHandshake: TLS only, before kReading.
  enum State { kHandshake, kReading, kWriting, kLingering } state = kReading;
  SSL* ssl = nullptr;                       // Null without TLS.
  bool tls_wants_write = false;             // The last TLS read could not go on without a write.
  bool tls_wants_read = false;              // The last TLS write could not go on without a read.
  std::string in;                           // Unparsed request bytes (at most the head limit).
  std::string out_head;                     // Status line and headers of the response.
  std::shared_ptr<const std::string> body;  // Null for HEAD and bodiless answers.
  size_t written = 0;                       // Bytes of out_head + body sent.
  size_t lingered = 0;
  size_t requests = 0;
  bool close_after = false;
  int64_t deadline_ns = 0;
  int64_t idle_since_ns = 0;  // When it last became idle: accepted, or a response sent.
  // Idle: no request under way; a TLS handshake counts (it carries no request yet).
  bool idle() const { return (state == kReading && in.empty()) || state == kHandshake; }
};

// Descriptors the process keeps for itself beyond the connections (NVML, /proc reads, logs).
constexpr size_t kReservedDescriptors = 64;

// Connections the descriptor limit leaves room for: at the default soft limit of 1,024, 960.
size_t descriptor_budget() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  const auto limit = static_cast<size_t>(rl.rlim_cur);
  return limit > 2 * kReservedDescriptors ? limit - kReservedDescriptors : limit / 2;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  std::string_view h = host;
  if (h.rfind("::ffff:", 0) == 0) h.remove_prefix(7);
  in_addr a4{};
  std::string v4(h);
  return inet_pton(AF_INET, v4.c_str(), &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

HttpServer::HttpServer(HttpHandler handler, HttpLimits limits, HttpSecurity security)
    : handler_(std::move(handler)), limits_(limits), security_(std::move(security)) {}

HttpServer::~HttpServer() {
  stop();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status HttpServer::bind(const std::string& host, int port) {
  const std::string shown = host.empty()                          ? fmt::format(":{}", port)
                            : host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                                                  : fmt::format("{}:{}", host, port);
  std::vector<std::string> candidates;
  if (host.empty())
    candidates = {"::", "0.0.0.0"};  // Dual stack first.
  else
    candidates = {host};
  std::string why = "not an address of this host";
  for (const std::string& h : candidates) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port_text = std::to_string(port);
    if (getaddrinfo(h.c_str(), port_text.c_str(), &hints, &found) != 0) continue;
    for (addrinfo* ai = found; ai && listen_fd_ < 0; ai = ai->ai_next) {
      int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      // SO_REUSEADDR for a fast restart; not SO_REUSEPORT, which would let a second exporter
      // share the port silently.
      int yes = 1, no = 0;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      if (ai->ai_family == AF_INET6 && host.empty()) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
      }
      if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, limits_.listen_backlog) == 0) {
        listen_fd_ = fd;
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
        char text[INET6_ADDRSTRLEN] = {};
        if (ss.ss_family == AF_INET6) {
          auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
          port_ = ntohs(a->sin6_port);
          inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
          bound_address_ = fmt::format("[{}]:{}", text, port_);
        } else {
          auto* a = reinterpret_cast<sockaddr_in*>(&ss);
          port_ = ntohs(a->sin_port);
          inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
          bound_address_ = fmt::format("{}:{}", text, port_);
        }
      } else {
        why = errno == EADDRINUSE ? "in use" : std::strerror(errno);
        close(fd);
      }
    }
    freeaddrinfo(found);
    if (listen_fd_ >= 0) break;
  }
  if (listen_fd_ < 0) {
    return Status::error(fmt::format("cannot listen on {} ({}); choose another with --listen HOST:PORT", shown, why));
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return ok_status();
}

void HttpServer::start() {
  if (listen_fd_ < 0 || thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void HttpServer::stop() {
  stopping_.store(true);
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
}

void HttpServer::loop() {
  // OpenSSL writes with write(2), not send(MSG_NOSIGNAL): a peer gone mid-answer would raise
  // SIGPIPE. It is directed at the writing thread, so blocking it here keeps the process alive
  // (the write fails with EPIPE) without touching the process's signal dispositions.
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return;
  std::unordered_map<int, Connection> conns;
  auto watch = [&](int fd, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(ep, op, fd, &ev);
  };
  watch(listen_fd_, EPOLLIN, EPOLL_CTL_ADD);
  watch(wake_fd_, EPOLLIN, EPOLL_CTL_ADD);

  auto drop = [&](int fd) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    auto it = conns.find(fd);
    if (it != conns.end() && it->second.ssl) SSL_free(it->second.ssl);
    close(fd);
    conns.erase(fd);
  };
  // Connection I/O, plain or TLS. Returns the bytes moved (> 0), 0 when the peer closed or
  // the connection failed, -1 when nothing can move now (wait for the next event; with TLS
  // a read may need the socket writable first: tls_wants_write).
  auto conn_recv = [&](int fd, Connection& c, char* buf, size_t n) -> ssize_t {
    if (!c.ssl) {
      ssize_t r = recv(fd, buf, n, 0);
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return -1;
      return r < 0 ? 0 : r;
    }
    ERR_clear_error();
    int r = SSL_read(c.ssl, buf, static_cast<int>(std::min<size_t>(n, INT32_MAX)));
    if (r > 0) return r;
    int e = SSL_get_error(c.ssl, r);
    c.tls_wants_write = e == SSL_ERROR_WANT_WRITE;
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? -1 : 0;
  };
  auto conn_send = [&](int fd, Connection& c, const char* buf, size_t n) -> ssize_t {
    if (!c.ssl) {
      ssize_t r = send(fd, buf, n, MSG_NOSIGNAL);
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return -1;
      return r <= 0 ? 0 : r;
    }
    ERR_clear_error();
    int r = SSL_write(c.ssl, buf, static_cast<int>(std::min<size_t>(n, INT32_MAX)));
    if (r > 0) return r;
    int e = SSL_get_error(c.ssl, r);
    c.tls_wants_read = e == SSL_ERROR_WANT_READ;
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? -1 : 0;
  };
  auto respond = [&](int fd, Connection& c, int status, std::string content_type,
                     std::shared_ptr<const std::string> body, bool head_only, bool close_after) {
    if (!body) body = std::make_shared<const std::string>(fmt::format("{} {}\n", status, reason(status)));
    ++c.requests;
    c.close_after = close_after || c.requests >= limits_.max_requests_per_connection;
    c.out_head = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n", status,
                             reason(status), content_type, body->size(), c.close_after ? "close" : "keep-alive");
    if (status == 405) c.out_head += "Allow: GET, HEAD\r\n";
    if (status == 401) c.out_head += "WWW-Authenticate: Basic realm=\"gpuscope\", charset=\"UTF-8\"\r\n";
    c.out_head += "\r\n";
    c.body = head_only ? nullptr : std::move(body);
    c.written = 0;
    c.state = Connection::kWriting;
    c.deadline_ns = monotonic_ns() + limits_.write_timeout_ns;
    watch(fd, EPOLLOUT, EPOLL_CTL_MOD);
  };
  auto error = [&](int fd, Connection& c, int status) {
    respond(fd, c, status, "text/plain; charset=utf-8", nullptr, false, true);
  };

  // Parses one complete head at the front of c.in and answers it.
  auto handle_head = [&](int fd, Connection& c, size_t end) {
    RequestHead head = parse_request_head(std::string_view(c.in.data(), end), limits_.max_header_count);
    c.in.erase(0, end);
    if (head.error_status != 0) return error(fd, c, head.error_status);
    // Refused before the body is read: on every path, whatever the method.
    if (head.has_body) return error(fd, c, 413);
    if (security_.basic_auth && !security_.basic_auth->allows(head.authorization)) {
      return respond(fd, c, 401, "text/plain; charset=utf-8", nullptr, head.method == "HEAD", head.close_after);
    }
    if (head.method != "GET" && head.method != "HEAD") return error(fd, c, 405);
    HttpRequest req;
    req.method = head.method;
    req.path = std::move(head.path);
    HttpResponse res = handler_(req);
    respond(fd, c, res.status, res.content_type, res.body, head.method == "HEAD", head.close_after);
  };

  // Reading state: takes what arrived; answers a complete head.
  auto on_readable = [&](int fd, Connection& c) {
    char buf[4096];
    while (c.state == Connection::kReading) {
      const size_t room = limits_.max_head_bytes + 1 - std::min(c.in.size(), limits_.max_head_bytes + 1);
      if (room == 0) break;
      ssize_t n = conn_recv(fd, c, buf, std::min(room, sizeof buf));
      if (n == 0) return drop(fd);
      if (n < 0) {
        if (c.ssl) watch(fd, c.tls_wants_write ? EPOLLOUT : EPOLLIN, EPOLL_CTL_MOD);
        break;
      }
      if (c.in.empty()) c.deadline_ns = monotonic_ns() + limits_.head_timeout_ns;  // A request begins.
      c.in.append(buf, static_cast<size_t>(n));
      size_t end = find_head_end(c.in);
      if (end != std::string::npos && end <= limits_.max_head_bytes) return handle_head(fd, c, end);
      if (c.in.size() > limits_.max_head_bytes || count_lines(c.in) > limits_.max_header_count + 2) {
        return error(fd, c, 431);
      }
    }
  };

  auto on_writable = [&](int fd, Connection& c) {
    while (true) {
      std::string_view chunk;
      if (c.written < c.out_head.size())
        chunk = std::string_view(c.out_head).substr(c.written);
      else if (c.body && c.written - c.out_head.size() < c.body->size())
        chunk = std::string_view(*c.body).substr(c.written - c.out_head.size());
      else
        break;
      ssize_t n = conn_send(fd, c, chunk.data(), chunk.size());
      if (n < 0) {
        if (c.ssl) watch(fd, c.tls_wants_read ? EPOLLIN : EPOLLOUT, EPOLL_CTL_MOD);
        return;
      }
      if (n == 0) return drop(fd);
      c.written += static_cast<size_t>(n);
    }
    c.body.reset();
    c.out_head.clear();
    if (c.close_after) {
      // Lingering close: stop sending, discard what the client still sends (an announced
      // body) for a bounded time so that it reads our answer instead of a reset. TLS: say
      // close_notify first (best effort; what follows is discarded undecrypted).
      if (c.ssl) {
        ERR_clear_error();
        SSL_shutdown(c.ssl);
      }
      shutdown(fd, SHUT_WR);
      c.in.clear();
      c.state = Connection::kLingering;
      c.deadline_ns = monotonic_ns() + limits_.linger_ns;
      watch(fd, EPOLLIN, EPOLL_CTL_MOD);
      return;
    }
    c.state = Connection::kReading;
    c.deadline_ns = monotonic_ns() + limits_.keep_alive_timeout_ns;
    c.idle_since_ns = monotonic_ns();
    watch(fd, EPOLLIN, EPOLL_CTL_MOD);
    size_t end = find_head_end(c.in);  // A pipelined request already here.
    if (end != std::string::npos) return handle_head(fd, c, end);
    // TLS may hold decrypted bytes of the next request that no socket event will announce.
    if (c.ssl && SSL_pending(c.ssl) > 0) on_readable(fd, c);
  };

  // TLS handshake state: on completion the connection reads its first request.
  auto on_handshake = [&](int fd, Connection& c) {
    ERR_clear_error();
    int r = SSL_do_handshake(c.ssl);
    if (r == 1) {
      c.state = Connection::kReading;
      watch(fd, EPOLLIN, EPOLL_CTL_MOD);
      return on_readable(fd, c);
    }
    int e = SSL_get_error(c.ssl, r);
    if (e == SSL_ERROR_WANT_READ) return watch(fd, EPOLLIN, EPOLL_CTL_MOD);
    if (e == SSL_ERROR_WANT_WRITE) return watch(fd, EPOLLOUT, EPOLL_CTL_MOD);
    drop(fd);  // Not TLS (plain HTTP on the TLS port), no acceptable certificate, ...
  };

  auto on_linger = [&](int fd, Connection& c) {
    char buf[4096];
    while (true) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) return drop(fd);
      c.lingered += static_cast<size_t>(n);
      if (c.lingered > limits_.linger_bytes) return drop(fd);
    }
  };

  // Connections are bounded by max_connections and by the descriptor limit. A new connection
  // beyond either takes the place of the connection idle longest (no request under way):
  // clients that connect and wait cannot lock a scrape out, as refusing the newcomer did. One
  // descriptor is kept spare: when accept fails for want of descriptors (EMFILE) and no
  // connection is idle, it is freed to take the newcomer off the queue and close it, so the
  // listening socket does not stay readable and spin this loop.
  const size_t max_conns = std::max<size_t>(1, std::min(limits_.max_connections, descriptor_budget()));
  int spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto shed_oldest_idle = [&]() -> bool {
    int oldest = -1;
    int64_t since = INT64_MAX;
    for (const auto& [fd, c] : conns) {
      if (c.idle() && c.idle_since_ns < since) {
        since = c.idle_since_ns;
        oldest = fd;
      }
    }
    if (oldest < 0) return false;
    drop(oldest);
    return true;
  };
  auto accept_all = [&] {
    while (true) {
      int cfd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (cfd < 0) {
        if (errno != EMFILE && errno != ENFILE) return;  // EAGAIN: the queue is empty.
        if (shed_oldest_idle()) continue;
        if (spare_fd < 0) return;
        close(spare_fd);
        cfd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (cfd >= 0) close(cfd);
        spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (cfd < 0) return;
        continue;
      }
      if (conns.size() >= max_conns && !shed_oldest_idle()) {
        close(cfd);
        continue;
      }
      Connection& c = conns[cfd];
      c.deadline_ns = monotonic_ns() + limits_.head_timeout_ns;
      c.idle_since_ns = monotonic_ns();
      if (security_.tls) {
        c.ssl = SSL_new(security_.tls->ctx());
        if (!c.ssl || SSL_set_fd(c.ssl, cfd) != 1) {
          ERR_clear_error();
          if (c.ssl) SSL_free(c.ssl);
          conns.erase(cfd);
          close(cfd);
          continue;
        }
        SSL_set_accept_state(c.ssl);
        c.state = Connection::kHandshake;
      }
      watch(cfd, EPOLLIN, EPOLL_CTL_ADD);
    }
  };

  std::vector<epoll_event> events(256);
  int64_t next_sweep = monotonic_ns() + 100'000'000;
  while (!stopping_.load()) {
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) continue;
      if (fd == listen_fd_) {
        accept_all();
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Connection& c = it->second;
      if (c.state == Connection::kHandshake)
        on_handshake(fd, c);
      else if (c.state == Connection::kReading)
        on_readable(fd, c);
      else if (c.state == Connection::kWriting)
        on_writable(fd, c);
      else
        on_linger(fd, c);
    }
    const int64_t now = monotonic_ns();
    if (now >= next_sweep) {
      next_sweep = now + 100'000'000;
      std::vector<int> expired;
      for (auto& [fd, c] : conns) {
        if (now >= c.deadline_ns) expired.push_back(fd);
      }
      for (int fd : expired) {
        Connection& c = conns[fd];
        if (c.state == Connection::kReading && !c.in.empty()) {
          // A head that did not arrive in time: say so (best effort), then close.
          error(fd, c, 408);
          on_writable(fd, c);
          if (conns.count(fd) && conns[fd].state == Connection::kLingering) drop(fd);
        } else {
          drop(fd);  // Idle keep-alive, a client not taking its answer, or lingering done.
        }
      }
    }
  }
  for (auto& [fd, c] : conns) {
    if (c.ssl) SSL_free(c.ssl);
    close(fd);
  }
  if (spare_fd >= 0) close(spare_fd);
  close(ep);
}

}  // namespace gpuscope::exporter
