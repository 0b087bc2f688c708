#include "cmd/launch/job_credentials.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

namespace fabps::launch {

void SetJobTokenUnlessGiven() {
  if (std::getenv("FABPS_JOB_TOKEN") != nullptr ||
      std::getenv("FABPS_JOB_TOKEN_FILE") != nullptr)
    return;
  std::random_device rd;
  char token[33];
  for (int i = 0; i < 32; i++) token[i] = "0123456789abcdef"[rd() % 16];
  token[32] = '\0';
  ::setenv("FABPS_JOB_TOKEN", token, 1);
}

bool MakeThrowAwayTls(const std::string& run_dir) {
  const std::string dir = run_dir + "/tls";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream(dir + "/ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                              << "basicConstraints=CA:FALSE\n";
  const std::string ec_key = " -newkey ec -pkeyopt ec_paramgen_curve:P-256 ";
  const std::string log = " >>" + dir + "/openssl.log 2>&1";
  for (const std::string& cmd :
       {"openssl req -x509" + ec_key + "-nodes -days 30 -subj /CN=fabps-ca " +
            "-keyout " + dir + "/ca.key -out " + dir + "/ca.pem",
        "openssl req" + ec_key + "-nodes -subj /CN=fabps-job -keyout " + dir +
            "/job.key -out " + dir + "/job.csr",
        "openssl x509 -req -days 30 -in " + dir + "/job.csr -CA " + dir +
            "/ca.pem -CAkey " + dir + "/ca.key -CAcreateserial -extfile " +
            dir + "/ext -out " + dir + "/job.pem"}) {
    if (std::system((cmd + log).c_str()) != 0) {
      std::fprintf(stderr, "fabps-launch: --tls: '%s' failed; see %s\n",
                   cmd.c_str(), (dir + "/openssl.log").c_str());
      return false;
    }
  }
  ::setenv("FABPS_TLS_CA", (dir + "/ca.pem").c_str(), 1);
  ::setenv("FABPS_TLS_CERT", (dir + "/job.pem").c_str(), 1);
  ::setenv("FABPS_TLS_KEY", (dir + "/job.key").c_str(), 1);
  return true;
}

}  // namespace fabps::launch
