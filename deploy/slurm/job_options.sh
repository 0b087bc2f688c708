# shellcheck shell=bash
# The options of deploy/slurm/fabps.sbatch (listed in its header): each is
# also the environment variable FABPS_<NAME> (--save-period:
# FABPS_SAVE_PERIOD), the option winning. fabps_parse_options validates
# every value and exports the FABPS_* variables that deploy/slurm/fabps-role.sh
# reads on the other nodes. Sourced, never run.

# fabps_int NAME VALUE MIN MAX: VALUE is a decimal integer in [MIN, MAX].
fabps_int() {
  if ! [[ "$2" =~ ^[0-9]+$ ]] || [ "$((10#$2))" -lt "$3" ] || [ "$((10#$2))" -gt "$4" ]; then
    echo "fabps.sbatch: $1 '$2': an integer in $3..$4 is needed" >&2
    return 1
  fi
}

fabps_parse_options() {
  local opt var
  while [ $# -gt 0 ]; do
    opt="$1"
    case "$opt" in
      -h | --help)
        sed -n '/^# A whole fabps/,/is the repository\.$/p' "$FABPS_HOME/deploy/slurm/fabps.sbatch" | cut -c3-
        exit 0
        ;;
      --job | --masters | --pservers | --trainers | --passes | --batch | --lr | \
        --dataset | --test-data | --data-dir | --provider | --interface | --etcd | \
        --output-dir | --build-dir | --save-period | --lease-ttl | --restarts | \
        --grace-ms | --start-timeout | --train-timeout)
        [ $# -ge 2 ] || {
          echo "fabps.sbatch: $opt needs a value" >&2
          return 1
        }
        var="FABPS_$(tr 'a-z-' 'A-Z_' <<<"${opt#--}")"
        [ "$var" = FABPS_OUTPUT_DIR ] && var=FABPS_RUN_DIR
        printf -v "$var" '%s' "$2"
        shift 2
        ;;
      *)
        echo "fabps.sbatch: unknown option '$opt' (--help lists them)" >&2
        return 1
        ;;
    esac
  done
  # FABPS_OUTPUT_DIR from the environment names the output directory too.
  FABPS_RUN_DIR="${FABPS_RUN_DIR:-${FABPS_OUTPUT_DIR:-${SLURM_SUBMIT_DIR:-$PWD}/runs/slurm-${SLURM_JOB_ID:-0}}}"
  FABPS_JOB="${FABPS_JOB:-${SLURM_JOB_NAME:-fabps}-${SLURM_JOB_ID:-0}}"
  FABPS_MASTERS="${FABPS_MASTERS:-2}"
  FABPS_PSERVERS="${FABPS_PSERVERS:-2}"
  FABPS_TRAINERS="${FABPS_TRAINERS:-2}"
  FABPS_PASSES="${FABPS_PASSES:-5}"
  FABPS_BATCH="${FABPS_BATCH:-64}"
  FABPS_LR="${FABPS_LR:-0.001}"
  FABPS_DATASET="${FABPS_DATASET:-}"
  FABPS_TEST_DATA="${FABPS_TEST_DATA:-}"
  FABPS_DATA_DIR="${FABPS_DATA_DIR:-${HOME:-/tmp}/.cache/fabps/fashion-mnist}"
  FABPS_PROVIDER="${FABPS_PROVIDER:-auto}"
  FABPS_INTERFACE="${FABPS_INTERFACE:-}"
  FABPS_ETCD="${FABPS_ETCD:-}"
  FABPS_BUILD_DIR="${FABPS_BUILD_DIR:-$FABPS_HOME/build}"
  FABPS_SAVE_PERIOD="${FABPS_SAVE_PERIOD:-10}"
  FABPS_LEASE_TTL="${FABPS_LEASE_TTL:-10}"
  FABPS_RESTARTS="${FABPS_RESTARTS:-10}"
  FABPS_GRACE_MS="${FABPS_GRACE_MS:-10000}"
  FABPS_START_TIMEOUT="${FABPS_START_TIMEOUT:-120}"
  FABPS_TRAIN_TIMEOUT="${FABPS_TRAIN_TIMEOUT:-0}"

  # The job name is a store prefix: coord::ValidateJobName's alphabet.
  FABPS_JOB=$(tr -c 'A-Za-z0-9._\n-' '_' <<<"$FABPS_JOB" | cut -c1-64)
  fabps_int --masters "$FABPS_MASTERS" 1 16 &&
    fabps_int --pservers "$FABPS_PSERVERS" 1 1024 &&
    fabps_int --trainers "$FABPS_TRAINERS" 1 4096 &&
    fabps_int --passes "$FABPS_PASSES" 1 10000 &&
    fabps_int --batch "$FABPS_BATCH" 1 65536 &&
    fabps_int --save-period "$FABPS_SAVE_PERIOD" 0 604800 &&
    fabps_int --lease-ttl "$FABPS_LEASE_TTL" 2 600 &&
    fabps_int --restarts "$FABPS_RESTARTS" 0 100000 &&
    fabps_int --grace-ms "$FABPS_GRACE_MS" 0 3600000 &&
    fabps_int --start-timeout "$FABPS_START_TIMEOUT" 1 86400 &&
    fabps_int --train-timeout "$FABPS_TRAIN_TIMEOUT" 0 31536000 || return 1
  if ! [[ "$FABPS_LR" =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]]; then
    echo "fabps.sbatch: --lr '$FABPS_LR': a positive number is needed" >&2
    return 1
  fi
  case "$FABPS_PROVIDER" in
    auto | "verbs;ofi_rxm" | "tcp;ofi_rxm" | shm | sockets) ;;
    *)
      echo "fabps.sbatch: --provider '$FABPS_PROVIDER': auto, verbs;ofi_rxm," \
        "tcp;ofi_rxm, shm or sockets" >&2
      return 1
      ;;
  esac
  if [ -n "$FABPS_ETCD" ] && ! [[ "$FABPS_ETCD" =~ ^https?://[^[:space:]]+$ ]]; then
    echo "fabps.sbatch: --etcd '$FABPS_ETCD': http://host:port[,...] is needed" >&2
    return 1
  fi
  if [ -n "$FABPS_DATASET" ] && [ -z "$FABPS_TEST_DATA" ]; then
    echo "fabps.sbatch: --dataset needs --test-data (the job reports its test" \
      "accuracy)" >&2
    return 1
  fi
  # The tasks run in the output directory (stray core files land there):
  # relative paths are made absolute from the submit directory.
  FABPS_RUN_DIR=$(realpath -m "$FABPS_RUN_DIR")
  FABPS_BUILD_DIR=$(realpath -m "$FABPS_BUILD_DIR")
  FABPS_DATA_DIR=$(realpath -m "$FABPS_DATA_DIR")
  [ -z "$FABPS_DATASET" ] || [[ "$FABPS_DATASET" == /* ]] || FABPS_DATASET="$PWD/$FABPS_DATASET"
  [ -z "$FABPS_TEST_DATA" ] || [[ "$FABPS_TEST_DATA" == /* ]] || FABPS_TEST_DATA="$PWD/$FABPS_TEST_DATA"
  export FABPS_RUN_DIR FABPS_JOB FABPS_MASTERS FABPS_PSERVERS FABPS_TRAINERS \
    FABPS_PASSES FABPS_BATCH FABPS_LR FABPS_DATASET FABPS_TEST_DATA \
    FABPS_DATA_DIR FABPS_PROVIDER FABPS_INTERFACE FABPS_ETCD FABPS_BUILD_DIR \
    FABPS_SAVE_PERIOD FABPS_LEASE_TTL FABPS_RESTARTS FABPS_GRACE_MS \
    FABPS_START_TIMEOUT FABPS_TRAIN_TIMEOUT
}
