// `--web.config.file`: the exporter-toolkit format parsed field by field, bad files refused in
// one line naming the file and the field, basic auth against bcrypt hashes, and the HTTP server
// over TLS with a self-signed certificate made here with the openssl command.
#include "exporter/web_config.h"
#include "exporter/test_socket.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "exporter/basic_auth.h"
#include "exporter/http_server.h"
#include "exporter/server.h"
#include "exporter/tls.h"

namespace gpuscope::exporter {
namespace {

namespace fs = std::filesystem;

// A bcrypt hash of `password` at cost 4 (the cheapest), made with libxcrypt.
std::string bcrypt(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  const char* h = crypt_r(password.c_str(), salt, &data);
  EXPECT_NE(h, nullptr);
  return h ? h : "";
}

std::string base64(const std::string& s) {
  std::string out(4 * ((s.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// A folder of its own with a self-signed certificate for localhost / 127.0.0.1.
struct TempDir {
  TempDir() {
    char t[] = "/tmp/gpuscope-webcfg-XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name) << text;
    return path + "/" + name;
  }
  // Writes NAME.crt and NAME.key; false when the openssl command failed.
  bool make_cert(const std::string& name) const {
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
        "-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
        path + "/" + name + ".key -out " + path + "/" + name + ".crt 2>/dev/null";
    return std::system(cmd.c_str()) == 0;
  }
  std::string path;
};

TEST(WebConfig, ParsesTheToolkitFieldsAndResolvesPathsFromTheFile) {
  const std::string hash = "$2y$10$" + std::string(53 - 22, 'a') + std::string(22, 'B');
  auto c = parse_web_config(
      "tls_server_config:\n  cert_file: tls/server.crt\n  key_file: /etc/k/server.key\n"
      "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  min_version: TLS13\n"
      "basic_auth_users:\n  prometheus: " +
          hash + "\n",
      "/etc/gpuscope/web.yml", "/etc/gpuscope");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(c->tls.has_value());
  EXPECT_EQ(c->tls->cert_file, "/etc/gpuscope/tls/server.crt");
  EXPECT_EQ(c->tls->key_file, "/etc/k/server.key");
  EXPECT_EQ(c->tls->client_ca_file, "/etc/gpuscope/ca.crt");
  EXPECT_EQ(c->tls->client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_TRUE(c->tls->min_tls13);
  ASSERT_EQ(c->basic_auth_users.size(), 1u);
  EXPECT_EQ(c->basic_auth_users.at("prometheus"), hash);
}

TEST(WebConfig, AnEmptyFileIsPlainHttpWithoutUsers) {
  auto c = parse_web_config("# nothing yet\n", "web.yml", ".");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->tls.has_value());
  EXPECT_TRUE(c->basic_auth_users.empty());
}

TEST(WebConfig, BadFilesAreOneLineNamingTheFileAndTheField) {
  const std::string good_tls = "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n";
  struct Case {
    std::string yaml;
    std::string message;
  } cases[] = {
      {"basic_auth_users:\n  alice: hunter2\n", "web.yml: basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users: [alice]\n", "web.yml: basic_auth_users: expected a mapping"},
      {"tls_server_config:\n  cert_file: a.crt\n", "web.yml: tls_server_config.key_file: missing"},
      {"tls_server_config:\n  key_file: a.key\n", "web.yml: tls_server_config.cert_file: missing"},
      {good_tls + "  client_auth_type: Sometimes\n",
       "web.yml: tls_server_config.client_auth_type: unknown type \"Sometimes\""},
      {good_tls + "  client_auth_type: RequireAndVerifyClientCert\n",
       "web.yml: tls_server_config.client_ca_file: missing"},
      {good_tls + "  client_ca_file: ca.crt\n",
       "web.yml: tls_server_config.client_ca_file: set, but client_auth_type NoClientCert"},
      {good_tls + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
       "web.yml: tls_server_config.cipher_suites: not supported"},
      {good_tls + "  min_version: TLS10\n", "web.yml: tls_server_config.min_version: \"TLS10\" is not supported"},
      {"http_server_config:\n  http2: false\n", "web.yml: http_server_config: not supported by gpuscope"},
      {"tls_server_config: [\n", "web.yml: line "},
      {"- a\n- b\n", "web.yml: expected a mapping"},
  };
  for (const Case& k : cases) {
    auto c = parse_web_config(k.yaml, "web.yml", "/d");
    ASSERT_FALSE(c.ok()) << k.yaml;
    const std::string& m = c.status().message();
    EXPECT_EQ(m.rfind(k.message, 0), 0u) << "got: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(WebConfig, UnreadableFilesAndCertificatesAreNamed) {
  TempDir d;
  auto missing = load_http_security(d.path + "/nope.yml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), d.path + "/nope.yml: cannot read the web config file");

  const std::string cfg = d.file("web.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  auto no_cert = load_http_security(cfg);
  ASSERT_FALSE(no_cert.ok());
  EXPECT_EQ(no_cert.status().message().rfind(
                cfg + ": tls_server_config.cert_file: cannot load the certificate " + d.path + "/server.crt: ", 0),
            0u)
      << no_cert.status().message();

  ASSERT_TRUE(d.make_cert("server"));
  ASSERT_TRUE(d.make_cert("other"));
  const std::string mismatched =
      d.file("mismatched.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n");
  auto bad_key = load_http_security(mismatched);
  ASSERT_FALSE(bad_key.ok());
  EXPECT_EQ(bad_key.status().message(), mismatched + ": tls_server_config.key_file: " + d.path +
                                            "/other.key does not match cert_file " + d.path + "/server.crt");
  auto good = load_http_security(cfg);
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_NE(good->tls, nullptr);
  EXPECT_EQ(good->basic_auth, nullptr);
}

TEST(BasicAuth, DecodesTheHeader) {
  auto c = decode_basic_credentials("Basic " + base64("prometheus:pa:ss word"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->first, "prometheus");
  EXPECT_EQ(c->second, "pa:ss word");
  EXPECT_TRUE(decode_basic_credentials("basic " + base64("a:")).has_value());
  EXPECT_FALSE(decode_basic_credentials("Bearer " + base64("a:b")).has_value());
  EXPECT_FALSE(decode_basic_credentials("Basic " + base64("no-colon")).has_value());
  EXPECT_FALSE(decode_basic_credentials("Basic !!!!").has_value());
  EXPECT_FALSE(decode_basic_credentials("").has_value());
}

TEST(BasicAuth, ChecksBcryptHashes) {
  BasicAuth auth({{"prometheus", bcrypt("s3cret")}, {"grafana", bcrypt("other")}});
  const std::string right = "Basic " + base64("prometheus:s3cret");
  EXPECT_TRUE(auth.allows(right));
  EXPECT_TRUE(auth.allows(right));  // Remembered; still the same answer.
  EXPECT_FALSE(auth.allows("Basic " + base64("prometheus:s3creT")));
  EXPECT_FALSE(auth.allows("Basic " + base64("grafana:s3cret")));  // Another user's password.
  EXPECT_FALSE(auth.allows("Basic " + base64("nobody:s3cret")));
  EXPECT_FALSE(auth.allows(""));
  EXPECT_TRUE(auth.allows("Basic " + base64("grafana:other")));
}

// --- The server with TLS and users -----------------------------------------------------------

int connect_to(int port) { return testing::connect_to(port, 5); }

// Sends `request` in plain text and reads until the server closes.
std::string plain_exchange(int port, const std::string& request) {
  int fd = connect_to(port);
  if (fd < 0) return "connect failed";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// A TLS client that trusts `ca_file`, optionally presenting a certificate; returns what the
// server answered, or "handshake failed".
std::string tls_exchange(int port, const std::string& ca_file, const std::string& request,
                         const std::string& client_cert = "", const std::string& client_key = "") {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (!client_cert.empty()) {
    SSL_CTX_use_certificate_file(ctx, client_cert.c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(ctx, client_key.c_str(), SSL_FILETYPE_PEM);
  }
  int fd = connect_to(port);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "localhost");
  SSL_set1_host(ssl, "localhost");
  std::string out;
  if (SSL_connect(ssl) != 1) {
    out = "handshake failed";
  } else if (SSL_write(ssl, request.data(), static_cast<int>(request.size())) <= 0) {
    out = "write failed";  // TLS 1.3: a refused client certificate shows here or at the read.
  } else {
    char buf[4096];
    int n;
    while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  ERR_clear_error();
  SSL_free(ssl);
  close(fd);
  SSL_CTX_free(ctx);
  return out;
}

struct SecureServed {
  explicit SecureServed(HttpSecurity security)
      : server(
            [](const HttpRequest& r) {
              HttpResponse res;
              if (r.path == "/metrics")
                res.body = std::make_shared<const std::string>("metric 1\n");
              else
                res.status = 404;
              return res;
            },
            HttpLimits{}, std::move(security)) {
    EXPECT_TRUE(server.bind("127.0.0.1", 0).ok());
    server.start();
  }
  HttpServer server;
};

const std::string kGet = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";

TEST(HttpSecurity, BasicAuthRefusesWithoutTheRightPassword) {
  HttpSecurity s;
  s.basic_auth = std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"prometheus", bcrypt("s3cret")}});
  SecureServed served(s);
  const int port = served.server.port();
  std::string none = plain_exchange(port, kGet + "\r\n");
  EXPECT_EQ(none.rfind("HTTP/1.1 401 Unauthorized\r\n", 0), 0u) << none;
  EXPECT_NE(none.find("WWW-Authenticate: Basic realm=\"gpuscope\""), std::string::npos) << none;
  EXPECT_EQ(none.find("metric 1"), std::string::npos);
  std::string wrong = plain_exchange(port, kGet + "Authorization: Basic " + base64("prometheus:wrong") + "\r\n\r\n");
  EXPECT_EQ(wrong.rfind("HTTP/1.1 401 ", 0), 0u) << wrong;
  std::string healthz = plain_exchange(port, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(healthz.rfind("HTTP/1.1 401 ", 0), 0u) << "every path, as the exporter-toolkit: " << healthz;
  std::string right = plain_exchange(port, kGet + "Authorization: Basic " + base64("prometheus:s3cret") + "\r\n\r\n");
  EXPECT_EQ(right.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << right;
  EXPECT_NE(right.find("metric 1"), std::string::npos);
}

TEST(HttpSecurity, TlsServesTlsClientsAndDropsPlainOnes) {
  TempDir d;
  ASSERT_TRUE(d.make_cert("server"));
  const std::string cfg = d.file("web.yml",
                                 "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                                 "basic_auth_users:\n  prometheus: " +
                                     bcrypt("s3cret") + "\n");
  auto security = load_http_security(cfg);
  ASSERT_TRUE(security.ok()) << security.status().message();
  SecureServed served(*security);
  const int port = served.server.port();
  const std::string ca = d.path + "/server.crt";
  std::string ok = tls_exchange(port, ca, kGet + "Authorization: Basic " + base64("prometheus:s3cret") + "\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("metric 1"), std::string::npos);
  std::string wrong = tls_exchange(port, ca, kGet + "Authorization: Basic " + base64("prometheus:nope") + "\r\n\r\n");
  EXPECT_EQ(wrong.rfind("HTTP/1.1 401 ", 0), 0u) << wrong;
  // Plain HTTP on the TLS port: the handshake fails and the connection closes, no HTTP answer.
  std::string plain = plain_exchange(port, kGet + "\r\n");
  EXPECT_EQ(plain.find("HTTP/1."), std::string::npos) << plain;
  EXPECT_EQ(plain.find("metric 1"), std::string::npos);
  // The server survives both and still serves.
  std::string again = tls_exchange(port, ca, kGet + "Authorization: Basic " + base64("prometheus:s3cret") + "\r\n\r\n");
  EXPECT_EQ(again.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << again;
}

TEST(HttpSecurity, RequireAndVerifyClientCertRefusesClientsWithoutOne) {
  TempDir d;
  ASSERT_TRUE(d.make_cert("server"));
  ASSERT_TRUE(d.make_cert("client"));  // Self-signed: its own CA.
  const std::string cfg = d.file("web.yml",
                                 "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                                 "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: client.crt\n");
  auto security = load_http_security(cfg);
  ASSERT_TRUE(security.ok()) << security.status().message();
  SecureServed served(*security);
  const std::string ca = d.path + "/server.crt";
  std::string without = tls_exchange(served.server.port(), ca, kGet + "\r\n");
  EXPECT_EQ(without.find("HTTP/1."), std::string::npos) << without;
  std::string wrong_cert =
      tls_exchange(served.server.port(), ca, kGet + "\r\n", d.path + "/server.crt", d.path + "/server.key");
  EXPECT_EQ(wrong_cert.find("HTTP/1."), std::string::npos) << "a certificate the CA did not sign: " << wrong_cert;
  std::string with =
      tls_exchange(served.server.port(), ca, kGet + "\r\n", d.path + "/client.crt", d.path + "/client.key");
  EXPECT_EQ(with.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << with;
}

}  // namespace
}  // namespace gpuscope::exporter
