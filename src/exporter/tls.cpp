#include "exporter/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509err.h>

#include <fmt/core.h>

namespace gpuscope::exporter {

namespace {

// RequestClientCert and RequireAnyClientCert take any certificate without verifying it (Go's
// semantics, which the exporter-toolkit exposes).
int accept_any(int, X509_STORE_CTX*) { return 1; }

}  // namespace

std::string take_openssl_error() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  const char* reason = ERR_reason_error_string(e);
  return reason ? reason : fmt::format("OpenSSL error {:#x}", e);
}

StatusOr<std::shared_ptr<const TlsContext>> TlsContext::create(const TlsServerConfig& config,
                                                               const std::string& config_path) {
  auto fail = [&](const char* field, const std::string& file, const std::string& what) {
    return Status::error(
        fmt::format("{}: tls_server_config.{}: {} {}: {}", config_path, field, what, file, take_openssl_error()));
  };
  ERR_clear_error();
  SSL_CTX* raw = SSL_CTX_new(TLS_server_method());
  if (!raw) return Status::error(fmt::format("{}: cannot create a TLS context: {}", config_path, take_openssl_error()));
  std::shared_ptr<const TlsContext> ctx(new TlsContext(raw));
  SSL_CTX_set_min_proto_version(raw, config.min_tls13 ? TLS1_3_VERSION : TLS1_2_VERSION);
  SSL_CTX_set_options(raw, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_num_tickets(raw, 0);
  SSL_CTX_set_session_cache_mode(raw, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_mode(raw, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
  if (SSL_CTX_use_certificate_chain_file(raw, config.cert_file.c_str()) != 1) {
    return fail("cert_file", config.cert_file, "cannot load the certificate");
  }
  if (SSL_CTX_use_PrivateKey_file(raw, config.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL checks the pair as it loads the key; say which mistake it is.
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return Status::error(fmt::format("{}: tls_server_config.key_file: {} does not match cert_file {}", config_path,
                                       config.key_file, config.cert_file));
    }
    return fail("key_file", config.key_file, "cannot load the private key");
  }
  if (SSL_CTX_check_private_key(raw) != 1) {
    return fail("key_file", config.key_file, "does not match cert_file");
  }
  switch (config.client_auth) {
    case ClientAuth::kNoClientCert:
      SSL_CTX_set_verify(raw, SSL_VERIFY_NONE, nullptr);
      break;
    case ClientAuth::kRequestClientCert:
      SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, accept_any);
      break;
    case ClientAuth::kRequireAnyClientCert:
      SSL_CTX_set_verify(raw, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
      break;
    case ClientAuth::kVerifyClientCertIfGiven:
      SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nullptr);
      break;
    case ClientAuth::kRequireAndVerifyClientCert:
      SSL_CTX_set_verify(raw, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  if (!config.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(raw, config.client_ca_file.c_str(), nullptr) != 1) {
      return fail("client_ca_file", config.client_ca_file, "cannot load the client CA certificates");
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(config.client_ca_file.c_str());
    if (!names) return fail("client_ca_file", config.client_ca_file, "no certificate in");
    SSL_CTX_set_client_CA_list(raw, names);
  }
  return ctx;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

}  // namespace gpuscope::exporter
