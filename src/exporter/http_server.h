// The exporter's HTTP/1.1 endpoint: GET and HEAD only, every input bounded, one event thread.
//
// Why not cpp-httplib (which the exporter used before): Debian 12's 0.11.4 cannot bound the
// number of request headers, buffers chunked bodies whatever the payload limit, compiles its
// listen backlog (5) into the shared library, and gives each connection a pool thread for as
// long as the client keeps sending a byte now and then, so eight slow clients blocked every
// scrape for 30 s. Its accepted sockets are not reachable from outside to vet them first.
//
// Model: one thread runs epoll over the listening socket and every connection (non-blocking).
// A connection costs a file descriptor and its buffered request head, never a thread, so slow
// or idle clients cannot starve scrapes. Handlers run on that thread and must be quick (the
// exporter's hand out a pre-rendered text).
// Limits (HttpLimits): the request head (request line + headers) is read within
// head_timeout_ns into at most max_head_bytes with at most max_header_count header lines,
// else 408 / 431 and close. A request announcing a body (Content-Length > 0 or any
// Transfer-Encoding) is answered 413 on any path before a byte of the body is read; the body
// is then discarded unbuffered for at most linger_bytes / linger_ns so that the client sees
// the answer, and the connection closed. Other methods: 405. Keep-alive: an idle connection
// closes after keep_alive_timeout_ns, any after max_requests_per_connection requests. A
// response must be taken within write_timeout_ns. Connections are bounded by max_connections
// and by the descriptor limit (RLIMIT_NOFILE less 64 kept for the rest of the process): beyond
// either, or when accept runs out of descriptors, a new connection takes the place of the one
// idle longest (connected, no request under way), so idle clients cannot lock scrapes out;
// with none idle the newcomer is closed at once (one descriptor is kept spare for that, so a
// full descriptor table never makes the event loop spin).
// TLS and basic authentication (HttpSecurity, from `--web.config.file`): with TLS, every
// connection first completes its handshake within head_timeout_ns (a connection still in its
// handshake counts as idle for the shedding above), then speaks the same HTTP. With users,
// a request without matching credentials gets 401 and `WWW-Authenticate: Basic` on every path
// (as the exporter-toolkit does), after the 413 check (a body is never read) and before 405.
// Request heads are parsed by exporter/http_request.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/status.h"

namespace gpuscope::exporter {

struct HttpLimits {
  size_t max_head_bytes = 16 * 1024;
  size_t max_header_count = 64;
  int64_t head_timeout_ns = 5'000'000'000;
  int64_t keep_alive_timeout_ns = 5'000'000'000;
  int64_t write_timeout_ns = 10'000'000'000;
  size_t max_requests_per_connection = 100;
  size_t max_connections = 4096;
  int listen_backlog = 1024;  // Capped by net.core.somaxconn.
  size_t linger_bytes = 1 << 20;
  int64_t linger_ns = 2'000'000'000;
};

class TlsContext;  // exporter/tls.h
class BasicAuth;   // exporter/basic_auth.h

// Both null: plain HTTP, no authentication (the default).
struct HttpSecurity {
  std::shared_ptr<const TlsContext> tls;
  std::shared_ptr<BasicAuth> basic_auth;  // Used by the event thread only.
};

struct HttpRequest {
  std::string method;  // "GET" or "HEAD".
  std::string path;    // Without the query string.
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::shared_ptr<const std::string> body;  // Shared: a scrape does not copy the text.
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  HttpServer(HttpHandler handler, HttpLimits limits = {}, HttpSecurity security = {});
  ~HttpServer();  // stop()

  // Binds and listens. host "" means every interface (IPv6 and IPv4 where the host has IPv6,
  // else IPv4); port 0 picks a free port. Error: one line naming the address.
  Status bind(const std::string& host, int port);
  int port() const { return port_; }
  // "[::]:9464" or "0.0.0.0:9464": what bind() ended up listening on.
  const std::string& bound_address() const { return bound_address_; }
  // Starts the event thread; bind() first.
  void start();
  void stop();

 private:
  void loop();

  HttpHandler handler_;
  HttpLimits limits_;
  HttpSecurity security_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::string bound_address_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// True for 127.0.0.0/8, ::1, ::ffff:127.x and "localhost".
bool is_loopback_host(const std::string& host);

}  // namespace gpuscope::exporter
