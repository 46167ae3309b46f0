// SHA-256 of byte strings (OpenSSL's libcrypto), for content-addressed caches.
#pragma once

#include <memory>
#include <string>

namespace grader {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const std::string& bytes);
  std::string hex();  // finishes the digest; lowercase hexadecimal

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace grader
