#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test suite
# through ctest (two at a time), and the ThreadSanitizer build of the
# concurrency tests. Tests start the processes they need themselves (pservers,
# masters, etcd) on free loopback ports and stop them by PID.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

tools/setup.sh
tools/build.sh

# The ThreadSanitizer build of the concurrency tests first, so that the main
# suite's counts are the closing lines.
if [ -x tools/test_sanitizers.sh ]; then
  tools/test_sanitizers.sh
fi
tools/fuzz.sh 10

echo "== ctest (main build)"
(cd build && ctest -j2 --output-on-failure --timeout 300)
