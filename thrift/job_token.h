// The job token: a shared secret that every control-plane connection of a
// job presents before its first call.
//
// A client sends it in a first message "fabps.Auth" (thrift/auth.thrift; one
// string field) right after connecting (OpenFramedChannel does this
// whenever it has a token); a server that has a token answers every other
// message on a connection that has not presented the right token with an
// error and closes it, and logs the refusal, so a stranger learns nothing:
// not the layout, not the fabric addresses and remote keys that
// RegisterTrainer hands out (the fabric handshake), not the store's keys. A
// server without a token accepts "fabps.Auth" and ignores it.
//
// Where a process finds its token, first found wins: an explicit file
// (a daemon's --token-file), the file named by $FABPS_JOB_TOKEN_FILE, the
// value of $FABPS_JOB_TOKEN. A trailing newline of a file is dropped.
// Tokens are 1..kMaxTokenBytes bytes; comparisons take constant time.
#ifndef FABPS_THRIFT_JOB_TOKEN_H_
#define FABPS_THRIFT_JOB_TOKEN_H_

#include <cstddef>
#include <string>

#include "base/status.h"

namespace fabps::rpc {

constexpr size_t kMaxTokenBytes = 4096;

// The token as described above; "" when none is configured.
// InvalidArgument for an empty or oversized token, IOError for an
// unreadable file (naming it).
Result<std::string> LoadJobToken(const std::string& token_file = "");

// The environment's token (LoadJobToken("")), read once per process; ""
// when none or invalid (the error is logged once).
const std::string& EnvironmentJobToken();

// Equal in constant time for equal lengths.
bool TokensEqual(const std::string& a, const std::string& b);

}  // namespace fabps::rpc

#endif  // FABPS_THRIFT_JOB_TOKEN_H_
