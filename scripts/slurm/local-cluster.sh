#!/usr/bin/env bash
# A one-node Slurm cluster of its own on this machine, for trying the class
# pipeline (and for the test suite and bench/class_throughput.sh): munged,
# slurmctld and slurmd with their key, sockets, ports, state and logs in DIR,
# so nothing of the machine's own configuration is used or changed. As root.
#
#   eval "$(scripts/slurm/local-cluster.sh start DIR)"   # starts it, prints: export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm/local-cluster.sh stop DIR               # cancels its jobs, stops the daemons
#
# `start` exits 77 with the reason on standard error when Slurm or munge is
# not installed or will not start here (Debian: munge slurmctld slurmd slurm-client).
set -uo pipefail

unavailable() {
  echo "local-cluster: $*" >&2
  exit 77
}

start() {
  local dir=$1
  for tool in munged mungekey slurmctld slurmd sbatch squeue sinfo scontrol; do
    command -v "$tool" >/dev/null ||
      unavailable "$tool is not installed (Debian: apt-get install munge slurmctld slurmd slurm-client)"
  done
  ((EUID == 0)) || unavailable "slurmd must run as root to start jobs"
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
  chmod 711 "$dir"
  chmod 700 "$dir/munge"
  mungekey -c -k "$dir/munge/munge.key" >/dev/null 2>&1 || unavailable "mungekey could not create a key"
  munged -f --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" ||
    unavailable "munged would not start: $(tail -2 "$dir/munge/munged.log" 2>/dev/null)"
  local host node
  host=$(hostname -s)
  node=$(slurmd -C 2>/dev/null | head -1)
  [[ $node == NodeName=* ]] || unavailable "slurmd -C cannot describe this machine"
  cat >"$dir/slurm.conf" <<CONF
ClusterName=gradelocal
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
$node State=UNKNOWN
PartitionName=grade Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF" || unavailable "slurmctld would not start: $(tail -3 "$dir/slurmctld.log" 2>/dev/null)"
  slurmd -f "$SLURM_CONF" || unavailable "slurmd would not start: $(tail -3 "$dir/slurmd.log" 2>/dev/null)"
  for _ in $(seq 60); do
    [[ $(sinfo -h -o %t 2>/dev/null) == idle ]] && break
    sleep 0.5
  done
  [[ $(sinfo -h -o %t 2>/dev/null) == idle ]] ||
    unavailable "the node did not become idle: $(tail -3 "$dir/slurmd.log" 2>/dev/null)"
  echo "local-cluster: $(slurmctld -V) up, node $node" >&2
  echo "export SLURM_CONF=$(printf %q "$SLURM_CONF")"
}

# A TCP port nothing listens on.
free_port() {
  local port
  for _ in $(seq 50); do
    port=$((20000 + RANDOM % 20000))
    if ! (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  return 1
}

stop() {
  local dir=$1
  [[ -f $dir/slurm.conf ]] && SLURM_CONF=$dir/slurm.conf scancel --quiet --full --user=root 2>/dev/null
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [[ -f $pidfile ]] && kill "$(cat "$pidfile")" 2>/dev/null
  done
  # Wait for them to go, so the folder can be removed.
  for _ in $(seq 20); do
    pgrep -f "$dir/slurm.conf" >/dev/null || break
    sleep 0.25
  done
}

case ${1:-} in
  start) start "${2:?usage: local-cluster.sh start DIR}" ;;
  stop) stop "${2:?usage: local-cluster.sh stop DIR}" ;;
  *)
    echo "usage: local-cluster.sh start|stop DIR" >&2
    exit 2
    ;;
esac
