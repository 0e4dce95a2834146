// HTTP basic authentication (RFC 7617) against bcrypt hashes, as the Prometheus
// exporter-toolkit's basic_auth_users does. Hashes are checked with crypt_r(3) (libxcrypt:
// $2a$, $2b$, $2y$).
//
// Cost: a bcrypt check takes tens of milliseconds at cost 10 and runs on the HTTP event
// thread. Credentials that passed are remembered (by their SHA-256, never in clear), so a
// scraper pays once; a wrong password pays each time, as with every bcrypt-protected endpoint.
// An unknown user is checked against a configured hash anyway, so that its answer takes as long
// as a wrong password's.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

struct crypt_data;

namespace gpuscope::exporter {

// "Basic BASE64(user:password)" -> {user, password}; nullopt when the scheme is not Basic
// (case-insensitive) or the rest is not base64 of a string with a ':'.
std::optional<std::pair<std::string, std::string>> decode_basic_credentials(std::string_view authorization);

class BasicAuth {
 public:
  // users: user -> bcrypt hash (web_config.h checked their form); at least one.
  explicit BasicAuth(std::map<std::string, std::string> users);
  ~BasicAuth();
  // The value of the request's Authorization header (empty if none). Not thread-safe: the
  // one HTTP thread calls it.
  bool allows(std::string_view authorization);

 private:
  std::map<std::string, std::string> users_;
  std::unordered_set<std::string> passed_;  // SHA-256 of Authorization values that passed.
  std::unique_ptr<crypt_data> scratch_;
};

}  // namespace gpuscope::exporter
