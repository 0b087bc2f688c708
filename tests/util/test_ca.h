// A throw-away certificate authority for TLS tests, made with the openssl
// command in a test's temporary directory (EC P-256 keys, valid two days).
#ifndef FABPS_TESTS_UTIL_TEST_CA_H_
#define FABPS_TESTS_UTIL_TEST_CA_H_

#include <string>

#include "base/status.h"

namespace fabps::testing {

// A certificate and its key.
struct CertFiles {
  std::string cert;
  std::string key;
};

class TestCa {
 public:
  // Makes the CA "<dir>/<name>.pem" with key "<dir>/<name>.key". The openssl
  // output goes to <dir>/openssl.log; its text is in the error.
  static Result<TestCa> Make(const std::string& dir, const std::string& name);

  // Issues "<dir>/<who>.pem" and ".key" signed by this CA, with
  // subjectAltName `san` (e.g. "IP:127.0.0.1,DNS:localhost").
  Result<CertFiles> Issue(const std::string& who, const std::string& san) const;

  std::string pem() const { return dir_ + "/" + name_ + ".pem"; }
  std::string key() const { return dir_ + "/" + name_ + ".key"; }

 private:
  Status Run(const std::string& command) const;

  std::string dir_, name_;
};

}  // namespace fabps::testing

#endif  // FABPS_TESTS_UTIL_TEST_CA_H_
