// What a launched job's processes share to trust each other: the job token
// (thrift/job_token.h) and, with --tls, a throw-away certificate authority
// for mutual TLS on the control plane. Both reach the children through the
// environment they inherit.
#ifndef FABPS_CMD_LAUNCH_JOB_CREDENTIALS_H_
#define FABPS_CMD_LAUNCH_JOB_CREDENTIALS_H_

#include <string>

namespace fabps::launch {

// Sets $FABPS_JOB_TOKEN to a fresh random token unless the caller set it
// or $FABPS_JOB_TOKEN_FILE.
void SetJobTokenUnlessGiven();

// A throw-away CA and one certificate for 127.0.0.1/localhost in
// <run_dir>/tls, made with the openssl command; sets $FABPS_TLS_CA,
// $FABPS_TLS_CERT and $FABPS_TLS_KEY. False (with the reason printed) when
// openssl fails.
bool MakeThrowAwayTls(const std::string& run_dir);

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_JOB_CREDENTIALS_H_
