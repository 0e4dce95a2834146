// `--web.config.file`: TLS and basic authentication for `gpuscope serve`, in the file format of
// the Prometheus exporter-toolkit (docs/web-configuration.md there), so that one file serves
// gpuscope and every other exporter on a node:
//
//   tls_server_config:
//     cert_file: server.crt            # relative paths: from the config file's folder
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert   # optional, default NoClientCert
//     client_ca_file: clients-ca.crt                 # needed by the Verify... types
//     min_version: TLS12                             # optional: TLS12 (default) or TLS13
//   basic_auth_users:
//     prometheus: $2y$10$...           # bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\n')
//
// Fields gpuscope does not implement (http_server_config, rate_limit, cipher_suites, inline
// cert/key, ...) are refused by name, never ignored: a setting an operator wrote must not be
// silently dropped. An empty file means plain HTTP without authentication, as in the toolkit.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace gpuscope::exporter {

// The exporter-toolkit's client_auth_type values (Go's tls.ClientAuthType names).
enum class ClientAuth {
  kNoClientCert,
  kRequestClientCert,           // Asked for, not required, not verified.
  kRequireAnyClientCert,        // Required, not verified.
  kVerifyClientCertIfGiven,     // Verified against client_ca_file when given.
  kRequireAndVerifyClientCert,  // Required and verified against client_ca_file.
};

struct TlsServerConfig {
  std::string cert_file;  // Absolute, or resolved against the config file's folder.
  std::string key_file;
  std::string client_ca_file;  // Empty: none.
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  bool min_tls13 = false;  // min_version TLS13; else TLS 1.2 is the floor.
};

struct WebConfig {
  std::string path;  // The file, for messages.
  std::optional<TlsServerConfig> tls;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
};

// Parses the YAML text of `path` (relative file names resolve against `base_dir`). Error, one
// line: "PATH: FIELD: problem" or "PATH: line N: YAML error".
StatusOr<WebConfig> parse_web_config(std::string_view text, const std::string& path, const std::string& base_dir);
// Reads and parses the file. Error: it cannot be read, or parse_web_config's.
StatusOr<WebConfig> load_web_config(const std::string& path);

// True for a bcrypt hash crypt(3) checks: $2a$, $2b$ or $2y$, cost 04..31, 53 characters of
// salt and hash.
bool is_bcrypt_hash(std::string_view hash);

}  // namespace gpuscope::exporter
