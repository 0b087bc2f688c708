#!/usr/bin/env bash
# One process of a fabps job on a Slurm allocation: what each task of the
# job steps that deploy/slurm/fabps.sbatch starts with srun runs. Its role
# comes from the step ($1) and the task's rank in it ($SLURM_PROCID):
#
#   fabps-role.sh servers   ranks 0 .. FABPS_MASTERS-1 are masters (the
#                           first to take master/lock leads, the others
#                           stand by), the next FABPS_PSERVERS ranks are
#                           pservers (each claims a free index in the store)
#   fabps-role.sh trainers  rank t is trainer t
#   fabps-role.sh doctor    (one task per node) the address this node
#                           advertises, then fabps-doctor's report
#
# srun places the ranks cyclically over the nodes (--distribution=cyclic),
# so masters, pservers and trainers spread over the allocation. The process
# runs under fabps-supervise (a crash or a lost lease restarts it in place,
# from its checkpoint for a pserver), with its output in
# $FABPS_RUN_DIR/logs/<role>-<n>.log. The job's settings come from the
# environment fabps.sbatch exports (srun passes it on); each is checked.
set -euo pipefail

step="${1:-}"
# shellcheck source=deploy/slurm/job_lib.sh
source "${FABPS_HOME:?fabps-role.sh: FABPS_HOME unset (run by fabps.sbatch)}/deploy/slurm/job_lib.sh"

needs=(FABPS_BUILD_DIR FABPS_RUN_DIR FABPS_PROVIDER SLURM_PROCID)
[ "$step" = doctor ] || needs+=(FABPS_STORE FABPS_JOB FABPS_MASTERS
  FABPS_PSERVERS FABPS_TRAINERS FABPS_PASSES FABPS_DATASET FABPS_TEST_DATA
  FABPS_SAVE_PERIOD FABPS_LEASE_TTL FABPS_RESTARTS FABPS_GRACE_MS
  FABPS_BATCH FABPS_LR)
for v in "${needs[@]}"; do
  [ -n "${!v:-}" ] || fabps_die "fabps-role.sh: $v is not set (run by fabps.sbatch)"
done
rank="$SLURM_PROCID"
[[ "$rank" =~ ^[0-9]+$ ]] || fabps_die "SLURM_PROCID '$rank' is not a rank"

host=$(fabps_node_address "${FABPS_INTERFACE:-}")
[ -n "$host" ] || fabps_die "$(hostname): no address for --interface '${FABPS_INTERFACE:-}'"
bin="$FABPS_BUILD_DIR"
run="$FABPS_RUN_DIR"

case "$step" in
  doctor)
    # One task per node, its output in logs/doctor-<slurm node name>.log: the address
    # this node's processes will advertise, then the fabric report.
    exec >"$run/logs/doctor-${SLURMD_NODENAME:-$(hostname)}.log" 2>&1
    echo "host: $(hostname) address: $host"
    doctor=("$bin/cmd/doctor/fabps-doctor")
    [ "$FABPS_PROVIDER" != auto ] && doctor+=(-p "$FABPS_PROVIDER")
    exec "${doctor[@]}"
    ;;
  servers)
    if [ "$rank" -lt "$FABPS_MASTERS" ]; then
      name="master-$rank"
      cmd=("$bin/master/fabps-master" --store "$FABPS_STORE" --job "$FABPS_JOB"
        --host "$host" --port 0 --port-file "$run/run/$name.port"
        --chunks-per-task 1 --task-timeout 10000
        --lease-ttl "$FABPS_LEASE_TTL")
    else
      name="pserver-$((rank - FABPS_MASTERS))"
      cmd=("$bin/pserver/daemon/fabps-pserver" --store "$FABPS_STORE"
        --job "$FABPS_JOB" --num-pservers "$FABPS_PSERVERS"
        --provider "$FABPS_PROVIDER" --host "$host" --port 0
        --port-file "$run/run/$name.port"
        --checkpoint-dir "$run/checkpoints" --save-period "$FABPS_SAVE_PERIOD"
        --lease-ttl "$FABPS_LEASE_TTL")
    fi
    ;;
  trainers)
    name="trainer-$rank"
    # Adam decaying linearly over the run: one update per mini-batch of the
    # 60000 Fashion-MNIST examples (as fabps-launch does).
    decay=$((FABPS_PASSES * ((60000 + FABPS_BATCH - 1) / FABPS_BATCH)))
    cmd=("$bin/examples/fashion_mnist/fabps-fashion-mnist-trainer"
      --provider "$FABPS_PROVIDER" --interface "$host" --trainer-id "$rank"
      --dataset "$FABPS_DATASET" --test-data "$FABPS_TEST_DATA"
      --passes "$FABPS_PASSES" --seed 1 --store "$FABPS_STORE"
      --job "$FABPS_JOB" --metrics-file "$run/$name.metrics"
      --timeout-ms 10000 --batch "$FABPS_BATCH" --rule adam --lr "$FABPS_LR"
      --lr-final 0.00005 --lr-decay-steps "$decay")
    ;;
  *) fabps_die "fabps-role.sh: step must be doctor, servers or trainers, not '$step'" ;;
esac

exec >>"$run/logs/$name.log" 2>&1
echo "== $name on $(hostname) ($host), node ${SLURM_NODEID:-?}, task $rank of step ${SLURM_JOB_ID:-?}.${SLURM_STEP_ID:-?}, $(date -u +%FT%TZ)"
exec "$bin/cmd/launch/fabps-supervise" --restarts "$FABPS_RESTARTS" \
  --grace-ms "$FABPS_GRACE_MS" "$name" -- "${cmd[@]}"
