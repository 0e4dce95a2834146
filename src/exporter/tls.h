// The server side of TLS for `gpuscope serve` (OpenSSL 3): one SSL_CTX built from the web
// config's tls_server_config, shared by every connection. The HTTP server (http_server.cpp)
// drives each connection's SSL object over its non-blocking socket.
//
// Protocol floor TLS 1.2 (the exporter-toolkit's default), or 1.3 with min_version TLS13.
// Renegotiation is off and no session tickets are sent, so after the handshake reads only read
// and writes only write on the socket (simpler event handling; Prometheus keeps connections
// alive, so resumption would save little).
#pragma once

#include <memory>

#include "core/status.h"
#include "exporter/web_config.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace gpuscope::exporter {

class TlsContext {
 public:
  // Loads the certificate chain, the key (and that they match) and the client CAs. Error, one
  // line naming the config file and field: "web.yml: tls_server_config.cert_file: cannot load
  // /etc/gpuscope/server.crt: no start line".
  static StatusOr<std::shared_ptr<const TlsContext>> create(const TlsServerConfig& config,
                                                            const std::string& config_path);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  SSL_CTX* ctx() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// The first error on OpenSSL's queue of this thread as text (and the queue cleared), or
// "unknown error".
std::string take_openssl_error();

}  // namespace gpuscope::exporter
