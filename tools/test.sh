#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test suite
# through ctest (two at a time), and the ThreadSanitizer build of the
# concurrency tests. Tests start the processes they need themselves (pservers,
# masters, etcd) on free loopback ports and stop them by PID.
#
#   tools/test.sh            the README's test command (what CI runs)
#   tools/test.sh --cluster  the longer multi-host runs instead: the tests
#                            labelled `cluster` (network-namespace hosts,
#                            network faults, an etcd cluster), which the
#                            default run leaves out
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

mode=default
case "${1:-}" in
  "") ;;
  --cluster) mode=cluster ;;
  *) echo "usage: $0 [--cluster]" >&2; exit 2 ;;
esac

tools/setup.sh
tools/build.sh

if [ "$mode" = cluster ]; then
  echo "== ctest -L cluster (main build)"
  (cd build && ctest -L cluster --output-on-failure --timeout 1800)
  exit 0
fi

# The ThreadSanitizer build of the concurrency tests first, so that the main
# suite's counts are the closing lines.
if [ -x tools/test_sanitizers.sh ]; then
  tools/test_sanitizers.sh
fi
tools/fuzz.sh 10

echo "== ctest (main build)"
(cd build && ctest -j2 -LE cluster --output-on-failure --timeout 300)
