#include "tests/util/test_ca.h"

#include <cstdlib>
#include <fstream>

#include "tests/util/subprocess.h"

namespace fabps::testing {

namespace {
const char kNewKey[] = " -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes ";
}  // namespace

Status TestCa::Run(const std::string& command) const {
  const std::string log = dir_ + "/openssl.log";
  if (std::system((command + " >>" + log + " 2>&1").c_str()) != 0) {
    return Status::IOError("'" + command + "' failed:\n" +
                           ReadFileOrEmpty(log));
  }
  return Status::OK();
}

Result<TestCa> TestCa::Make(const std::string& dir, const std::string& name) {
  TestCa ca;
  ca.dir_ = dir;
  ca.name_ = name;
  FABPS_RETURN_IF_ERROR(ca.Run("openssl req -x509" + std::string(kNewKey) +
                               "-days 2 -subj /CN=" + name + " -keyout " +
                               ca.key() + " -out " + ca.pem()));
  return ca;
}

Result<CertFiles> TestCa::Issue(const std::string& who,
                                const std::string& san) const {
  const std::string base = dir_ + "/" + who;
  CertFiles out{base + ".pem", base + ".key"};
  std::ofstream(base + ".ext")
      << "subjectAltName=" << san << "\nbasicConstraints=CA:FALSE\n";
  FABPS_RETURN_IF_ERROR(Run("openssl req" + std::string(kNewKey) +
                            "-subj /CN=" + who + " -keyout " + out.key +
                            " -out " + base + ".csr"));
  FABPS_RETURN_IF_ERROR(Run("openssl x509 -req -days 2 -in " + base +
                            ".csr -CA " + pem() + " -CAkey " + key() +
                            " -CAcreateserial -extfile " + base + ".ext -out " +
                            out.cert));
  return out;
}

}  // namespace fabps::testing
