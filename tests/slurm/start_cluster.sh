#!/usr/bin/env bash
# Start a single-node SLURM cluster (munged, slurmctld, slurmd) as root.
#
# Usage: start_cluster.sh [STATE_DIR]
#
# Everything lives in STATE_DIR (default $SWAPKL_SLURM_DIR, else
# /tmp/swapkl-slurm): the generated etc/slurm.conf, a fresh munge key and
# socket, the daemons' state, logs and pid files. Nothing under /etc is used
# or changed. Client commands find the config through SLURM_CONF:
#     source STATE_DIR/env.sh      # exports SLURM_CONF
#     sinfo
# and, while the cluster runs, through the symlink /run/slurm/conf ->
# STATE_DIR/etc, the place where SLURM clients look when SLURM_CONF is unset
# and /etc/slurm/slurm.conf does not exist (slurmd makes the same link in
# "configless" mode). The link is needed because the Snakemake SLURM jobstep
# executor removes SLURM_CONF from the environment of the `srun` it runs
# inside each job. Hence the start refuses when /etc/slurm/slurm.conf exists
# or /run/slurm/conf belongs to something else.
# Stop with stop_cluster.sh STATE_DIR (kills exactly the pids recorded here
# and removes the link).
#
# Environment knobs (all optional):
#   SWAPKL_SLURM_PARTITION       partition name            (default: debug)
#   SWAPKL_SLURM_CTLD_PORT       slurmctld port            (default: 16817)
#   SWAPKL_SLURM_SLURMD_PORT     slurmd port               (default: 16818)
#   SWAPKL_SLURM_START_TIMEOUT   seconds to wait for idle  (default: 30)
#
# The node is named after `hostname -s`, with the CPUs/memory slurmd detects
# (`slurmd -C`). There is no GRES (no GPUs): a job asking for --gpus or
# --gres=gpu is rejected at submission. There is no accounting database
# (sacct cannot see jobs); MinJobAge is one hour so that `squeue --states=all`
# keeps reporting finished jobs, which is what the Snakemake SLURM executor
# then uses for job status (slurm-status-command: squeue).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state_dir=${1:-${SWAPKL_SLURM_DIR:-/tmp/swapkl-slurm}}
partition=${SWAPKL_SLURM_PARTITION:-debug}
ctld_port=${SWAPKL_SLURM_CTLD_PORT:-16817}
slurmd_port=${SWAPKL_SLURM_SLURMD_PORT:-16818}
start_timeout=${SWAPKL_SLURM_START_TIMEOUT:-30}
min_job_age=3600

die() {
    echo "start_cluster.sh: $*" >&2
    exit 1
}

[[ $EUID -eq 0 ]] || die "must run as root (slurmd runs jobs as the submitting user)"
for bin in munged munge slurmctld slurmd sinfo scontrol; do
    command -v "$bin" >/dev/null 2>&1 || die "$bin not found; run $here/install.sh"
done

mkdir -p "$state_dir"
state_dir=$(cd "$state_dir" && pwd)
conf_dir=$state_dir/etc
conf=$conf_dir/slurm.conf
run_link=/run/slurm/conf
munge_socket=$state_dir/munge.socket
# Unix socket paths are limited to 107 bytes.
[[ ${#munge_socket} -lt 100 ]] || die "state dir path too long for a socket: $state_dir"

# Refuse to start a second set of daemons on the same state dir.
for name in munged slurmctld slurmd; do
    pid_file=$state_dir/$name.pid
    if [[ -s $pid_file ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
        die "$name already running (pid $(cat "$pid_file")); run $here/stop_cluster.sh $state_dir first"
    fi
    rm -f "$pid_file"
done

[[ ! -e /etc/slurm/slurm.conf ]] ||
    die "/etc/slurm/slurm.conf exists: srun inside jobs would use that cluster, not this one"
# A link left by a cluster that is gone (state dir deleted, or no daemon
# alive from its pid files) is stale: replace it.
if [[ -L $run_link ]]; then
    other_state=$(dirname "$(readlink "$run_link")")
    other_alive=0
    for name in munged slurmctld slurmd; do
        pid_file=$other_state/$name.pid
        if [[ -s $pid_file ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
            other_alive=1
        fi
    done
    ((other_alive)) || rm -f "$run_link"
fi
if [[ -e $run_link || -L $run_link ]] && [[ $(readlink "$run_link") != "$conf_dir" ]]; then
    die "$run_link is in use ($(readlink "$run_link" || echo 'not a link')); stop that cluster first (stop_cluster.sh <its state dir>)"
fi

mkdir -p "$conf_dir" "$state_dir/munge" "$state_dir/ctld" "$state_dir/spool" "$state_dir/log"
chmod 755 "$state_dir"
chmod 700 "$state_dir/munge" "$state_dir/ctld" "$state_dir/spool"

on_exit() {
    local rc=$?
    ((rc == 0)) && return 0
    echo "start_cluster.sh: start failed; log tails follow" >&2
    for log in "$state_dir"/log/*.log; do
        [[ -f $log ]] || continue
        echo "---- $log" >&2
        tail -n 20 "$log" >&2
    done
    "$here/stop_cluster.sh" "$state_dir" >&2 || true
    return "$rc"
}
# From here on a failure stops whatever was started.
trap on_exit EXIT

# ---- munge: private key, socket in the state dir ---------------------------
key=$state_dir/munge/munge.key
if [[ ! -s $key ]]; then
    head -c 1024 /dev/urandom >"$key"
fi
chmod 400 "$key"
rm -f "$munge_socket" "$munge_socket.lock"
munged --force \
    --socket="$munge_socket" \
    --key-file="$key" \
    --pid-file="$state_dir/munged.pid" \
    --log-file="$state_dir/log/munged.log" \
    --seed-file="$state_dir/munge/munged.seed" \
    </dev/null >/dev/null 2>&1
for _ in $(seq 50); do
    munge --socket="$munge_socket" -n >/dev/null 2>&1 && break
    sleep 0.1
done
munge --socket="$munge_socket" -n >/dev/null || die "munged does not answer on $munge_socket"

# ---- slurm.conf --------------------------------------------------------------
host=$(hostname -s)
# slurmd -C prints "NodeName=<host> CPUs=.. Boards=.. SocketsPerBoard=..
# CoresPerSocket=.. ThreadsPerCore=.. RealMemory=.."; fall back to nproc and
# /proc/meminfo when it cannot.
node_hw=$(slurmd -C 2>/dev/null | grep -m1 '^NodeName=' | sed 's/^NodeName=[^ ]* //' || true)
if [[ -z $node_hw ]]; then
    mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
    node_hw="CPUs=$(nproc) RealMemory=$mem_mb"
fi

cat >"$conf" <<EOF
# Generated by tests/slurm/start_cluster.sh; single-node test cluster.
ClusterName=swapkl
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$state_dir/ctld
SlurmdSpoolDir=$state_dir/spool
SlurmctldPidFile=$state_dir/slurmctld.pid
SlurmdPidFile=$state_dir/slurmd.pid
SlurmctldLogFile=$state_dir/log/slurmctld.log
SlurmdLogFile=$state_dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups in this container: track job processes by parent pid.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Finished jobs stay visible to squeue --states=all for this long (seconds).
MinJobAge=$min_job_age
ReturnToService=2
# Do not drain the node if the detected hardware differs from the line below.
SlurmdParameters=config_overrides
MailProg=/bin/true
# Jobs that give no --mem get this much instead of the whole node.
DefMemPerCPU=512
NodeName=$host NodeAddr=127.0.0.1 $node_hw State=UNKNOWN
PartitionName=$partition Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

cat >"$state_dir/env.sh" <<EOF
export SLURM_CONF=$conf
EOF
export SLURM_CONF=$conf
mkdir -p "$(dirname "$run_link")"
ln -sfn "$conf_dir" "$run_link"

# ---- daemons -----------------------------------------------------------------
# Both daemonize and write their pid files (paths set in slurm.conf).
# -c: start from a clean controller state (no jobs from an earlier run).
slurmctld -c -f "$conf" </dev/null >/dev/null 2>&1
slurmd -f "$conf" -N "$host" </dev/null >/dev/null 2>&1

deadline=$((SECONDS + start_timeout))
state=""
while ((SECONDS < deadline)); do
    state=$(sinfo -h -N -n "$host" -o '%T' 2>/dev/null || true)
    [[ $state == idle ]] && break
    sleep 0.5
done
if [[ $state != idle ]]; then
    die "node $host not idle after ${start_timeout}s (state: '${state}')"
fi

trap - EXIT # up: from here on nothing stops the cluster
echo "start_cluster.sh: node $host idle in partition $partition after ${SECONDS}s"
echo "start_cluster.sh: export SLURM_CONF=$conf   (or: source $state_dir/env.sh)"
sinfo -N -l
