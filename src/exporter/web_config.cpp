#include "exporter/web_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <yaml-cpp/yaml.h>

namespace gpuscope::exporter {

namespace {

const char* kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "empty";
    default:
      return "a single value";
  }
}

Status field_error(const WebConfig& c, const std::string& field, const std::string& problem) {
  return Status::error(fmt::format("{}: {}: {}", c.path, field, problem));
}

StatusOr<std::string> scalar(const WebConfig& c, const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) return field_error(c, field, fmt::format("expected a string, found {}", kind(n)));
  return n.Scalar();
}

StatusOr<std::string> file_field(const WebConfig& c, const YAML::Node& n, const std::string& field,
                                 const std::string& base_dir) {
  ASSIGN_OR_RETURN(std::string v, scalar(c, n, field));
  if (v.empty()) return field_error(c, field, "empty file name");
  std::filesystem::path p(v);
  if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
  return p.lexically_normal().string();
}

Status parse_tls(WebConfig& c, const YAML::Node& tls, const std::string& base_dir) {
  if (tls.IsNull()) return ok_status();  // "tls_server_config:" with nothing: no TLS.
  if (!tls.IsMap()) {
    return field_error(c, "tls_server_config", fmt::format("expected a mapping, found {}", kind(tls)));
  }
  TlsServerConfig t;
  std::string auth_name = "NoClientCert";
  for (const auto& kv : tls) {
    const std::string key = kv.first.Scalar();
    const std::string field = "tls_server_config." + key;
    if (key == "cert_file") {
      ASSIGN_OR_RETURN(t.cert_file, file_field(c, kv.second, field, base_dir));
    } else if (key == "key_file") {
      ASSIGN_OR_RETURN(t.key_file, file_field(c, kv.second, field, base_dir));
    } else if (key == "client_ca_file") {
      ASSIGN_OR_RETURN(t.client_ca_file, file_field(c, kv.second, field, base_dir));
    } else if (key == "client_auth_type") {
      ASSIGN_OR_RETURN(auth_name, scalar(c, kv.second, field));
      if (auth_name == "NoClientCert")
        t.client_auth = ClientAuth::kNoClientCert;
      else if (auth_name == "RequestClientCert")
        t.client_auth = ClientAuth::kRequestClientCert;
      else if (auth_name == "RequireAnyClientCert")
        t.client_auth = ClientAuth::kRequireAnyClientCert;
      else if (auth_name == "VerifyClientCertIfGiven")
        t.client_auth = ClientAuth::kVerifyClientCertIfGiven;
      else if (auth_name == "RequireAndVerifyClientCert")
        t.client_auth = ClientAuth::kRequireAndVerifyClientCert;
      else {
        return field_error(c, field,
                           fmt::format("unknown type \"{}\" (NoClientCert, RequestClientCert, RequireAnyClientCert, "
                                       "VerifyClientCertIfGiven or RequireAndVerifyClientCert)",
                                       auth_name));
      }
    } else if (key == "min_version") {
      ASSIGN_OR_RETURN(std::string v, scalar(c, kv.second, field));
      if (v == "TLS13")
        t.min_tls13 = true;
      else if (v != "TLS12")
        return field_error(c, field, fmt::format("\"{}\" is not supported (TLS12 or TLS13)", v));
    } else {
      return field_error(c, field,
                         "not supported by gpuscope (supported: cert_file, key_file, client_auth_type, "
                         "client_ca_file, min_version)");
    }
  }
  if (t.cert_file.empty()) return field_error(c, "tls_server_config.cert_file", "missing (the server certificate)");
  if (t.key_file.empty()) return field_error(c, "tls_server_config.key_file", "missing (the server's private key)");
  const bool verifies =
      t.client_auth == ClientAuth::kVerifyClientCertIfGiven || t.client_auth == ClientAuth::kRequireAndVerifyClientCert;
  if (verifies && t.client_ca_file.empty()) {
    return field_error(c, "tls_server_config.client_ca_file",
                       fmt::format("missing: client_auth_type {} verifies client certificates against it", auth_name));
  }
  if (!verifies && !t.client_ca_file.empty()) {
    return field_error(c, "tls_server_config.client_ca_file",
                       fmt::format("set, but client_auth_type {} never verifies a client certificate "
                                   "(use VerifyClientCertIfGiven or RequireAndVerifyClientCert)",
                                   auth_name));
  }
  c.tls = std::move(t);
  return ok_status();
}

Status parse_users(WebConfig& c, const YAML::Node& users) {
  if (users.IsNull()) return ok_status();
  if (!users.IsMap()) {
    return field_error(c, "basic_auth_users",
                       fmt::format("expected a mapping of user: bcrypt hash, found {}", kind(users)));
  }
  for (const auto& kv : users) {
    const std::string user = kv.first.Scalar();
    const std::string field = "basic_auth_users." + user;
    if (user.empty() || user.find(':') != std::string::npos) {
      return field_error(c, field, "a user name must be non-empty and without ':'");
    }
    ASSIGN_OR_RETURN(std::string hash, scalar(c, kv.second, field));
    if (!is_bcrypt_hash(hash)) {
      return field_error(c, field,
                         "not a bcrypt hash ($2y$, $2b$ or $2a$, 60 characters; "
                         "make one with: htpasswd -nBC 10 \"\" | tr -d ':\\n')");
    }
    c.basic_auth_users[user] = hash;
  }
  return ok_status();
}

}  // namespace

bool is_bcrypt_hash(std::string_view h) {
  if (h.size() != 60 || h.substr(0, 2) != "$2" || (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') || h[3] != '$' ||
      h[6] != '$') {
    return false;
  }
  if (h[4] < '0' || h[4] > '3' || h[5] < '0' || h[5] > '9') return false;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (char ch : h.substr(7)) {
    const bool ok =
        (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '/';
    if (!ok) return false;
  }
  return true;
}

StatusOr<WebConfig> parse_web_config(std::string_view text, const std::string& path, const std::string& base_dir) {
  WebConfig c;
  c.path = path;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Status::error(fmt::format("{}: line {}: not valid YAML ({})", path, e.mark.line + 1, e.msg));
  }
  if (root.IsNull()) return c;
  if (!root.IsMap()) {
    return Status::error(
        fmt::format("{}: expected a mapping (tls_server_config, basic_auth_users), found {}", path, kind(root)));
  }
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      if (key == "tls_server_config") {
        RETURN_IF_ERROR(parse_tls(c, kv.second, base_dir));
      } else if (key == "basic_auth_users") {
        RETURN_IF_ERROR(parse_users(c, kv.second));
      } else {
        return field_error(c, key, "not supported by gpuscope (supported: tls_server_config, basic_auth_users)");
      }
    }
  } catch (const YAML::Exception& e) {
    return Status::error(fmt::format("{}: line {}: {}", path, e.mark.line + 1, e.msg));
  }
  return c;
}

StatusOr<WebConfig> load_web_config(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::error(fmt::format("{}: a folder, not a web config file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(fmt::format("{}: cannot read the web config file", path));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return Status::error(fmt::format("{}: cannot read the web config file", path));
  return parse_web_config(s.str(), path, std::filesystem::path(path).parent_path().string());
}

}  // namespace gpuscope::exporter
