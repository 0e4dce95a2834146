#include "exporter/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <cctype>
#include <cstring>
#include <vector>

namespace gpuscope::exporter {

namespace {

// Remembered passes are few (one per scraper); the bound only stops growth from many users.
constexpr size_t kMaxRemembered = 256;

std::string sha256(std::string_view s) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d);
  return std::string(reinterpret_cast<const char*>(d), sizeof d);
}

}  // namespace

std::optional<std::pair<std::string, std::string>> decode_basic_credentials(std::string_view a) {
  constexpr std::string_view kScheme = "basic ";
  if (a.size() < kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != kScheme[i]) return std::nullopt;
  }
  std::string_view b64 = a.substr(kScheme.size());
  while (!b64.empty() && b64.front() == ' ') b64.remove_prefix(1);
  if (b64.empty() || b64.size() % 4 != 0 || b64.size() > 4096) return std::nullopt;
  for (char c : b64) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/' && c != '=') return std::nullopt;
  }
  std::vector<unsigned char> out(b64.size() / 4 * 3 + 1);
  // EVP_DecodeBlock decodes whole quanta and counts the padding as zero bytes: take them off.
  int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  if (n < 0) return std::nullopt;
  size_t pad = b64.size() >= 1 && b64.back() == '=' ? (b64.size() >= 2 && b64[b64.size() - 2] == '=' ? 2 : 1) : 0;
  if (static_cast<size_t>(n) < pad) return std::nullopt;
  std::string text(reinterpret_cast<const char*>(out.data()), static_cast<size_t>(n) - pad);
  size_t colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::make_pair(text.substr(0, colon), text.substr(colon + 1));
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users)
    : users_(std::move(users)), scratch_(std::make_unique<crypt_data>()) {}

BasicAuth::~BasicAuth() = default;

bool BasicAuth::allows(std::string_view authorization) {
  if (authorization.empty()) return false;
  const std::string key = sha256(authorization);
  if (passed_.count(key)) return true;
  auto creds = decode_basic_credentials(authorization);
  if (!creds || users_.empty()) return false;
  auto it = users_.find(creds->first);
  const bool known = it != users_.end();
  // An unknown user is checked against another user's hash: the same cost, then refused.
  const std::string& hash = known ? it->second : users_.begin()->second;
  if (creds->second.find('\0') != std::string::npos) return false;
  std::memset(scratch_.get(), 0, sizeof(crypt_data));
  const char* got = crypt_r(creds->second.c_str(), hash.c_str(), scratch_.get());
  const bool match = got && std::strlen(got) == hash.size() && CRYPTO_memcmp(got, hash.data(), hash.size()) == 0;
  if (!known || !match) return false;
  if (passed_.size() >= kMaxRemembered) passed_.clear();
  passed_.insert(key);
  return true;
}

}  // namespace gpuscope::exporter
