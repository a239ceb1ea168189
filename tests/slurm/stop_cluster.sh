#!/usr/bin/env bash
# Stop the cluster started by start_cluster.sh on the same STATE_DIR.
#
# Usage: stop_cluster.sh [STATE_DIR]
#
# Cancels the cluster's jobs (scancel through its own slurmctld), then ends
# exactly the daemons whose pids start_cluster.sh recorded in STATE_DIR
# (slurmd, slurmctld, munged; SIGTERM, SIGKILL after 10 s), checking that
# each pid still runs the expected program, and removes the /run/slurm/conf
# link if it points to STATE_DIR/etc. Safe to run when nothing runs.
# STATE_DIR itself is left in place (logs); remove it if you like.
set -uo pipefail

state_dir=${1:-${SWAPKL_SLURM_DIR:-/tmp/swapkl-slurm}}
if [[ ! -d $state_dir ]]; then
    echo "stop_cluster.sh: no state dir $state_dir, nothing to stop"
    exit 0
fi
state_dir=$(cd "$state_dir" && pwd)
export SLURM_CONF=$state_dir/etc/slurm.conf

# Prints the pid from STATE_DIR/NAME.pid if that process still runs NAME.
live_pid() {
    local name=$1 pid_file=$state_dir/$1.pid pid exe
    [[ -s $pid_file ]] || return 1
    pid=$(tr -dc '0-9' <"$pid_file")
    [[ -n $pid ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    # Debian installs slurmd/slurmctld as alternatives for slurmd-wlm etc.
    exe=$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)" 2>/dev/null)
    exe=${exe%" (deleted)"}
    if [[ $exe != "$name" && $exe != "$name-wlm" ]]; then
        echo "stop_cluster.sh: pid $pid from $pid_file runs '$exe', not $name; leaving it" >&2
        return 1
    fi
    echo "$pid"
}

# Cancel remaining jobs so that no job step outlives slurmd.
if live_pid slurmctld >/dev/null && [[ -f $SLURM_CONF ]]; then
    jobs=$(timeout 10 squeue -h -t PENDING,RUNNING,SUSPENDED -o '%i' 2>/dev/null | tr '\n' ' ')
    if [[ -n ${jobs// /} ]]; then
        echo "stop_cluster.sh: cancelling jobs $jobs"
        # shellcheck disable=SC2086
        timeout 10 scancel $jobs || true
        for _ in $(seq 20); do
            left=$(timeout 10 squeue -h -t PENDING,RUNNING,SUSPENDED,COMPLETING -o '%i' 2>/dev/null)
            [[ -z $left ]] && break
            sleep 0.5
        done
    fi
fi

status=0
# The config link start_cluster.sh made, if it is still ours.
run_link=/run/slurm/conf
if [[ -L $run_link && $(readlink "$run_link") == "$state_dir/etc" ]]; then
    rm -f "$run_link"
fi

# Ends the given daemons together: SIGTERM, then SIGKILL after 10 s.
stop_daemons() {
    local name pid
    local -A pids=()
    for name in "$@"; do
        if pid=$(live_pid "$name"); then
            pids[$name]=$pid
            kill -TERM "$pid" 2>/dev/null || true
        else
            rm -f "$state_dir/$name.pid"
        fi
    done
    for _ in $(seq 100); do
        local alive=0
        for pid in "${pids[@]}"; do
            kill -0 "$pid" 2>/dev/null && alive=1
        done
        ((alive)) || break
        sleep 0.1
    done
    for name in "${!pids[@]}"; do
        pid=${pids[$name]}
        if kill -0 "$pid" 2>/dev/null; then
            echo "stop_cluster.sh: $name (pid $pid) ignored SIGTERM, sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.2
        fi
        if kill -0 "$pid" 2>/dev/null; then
            echo "stop_cluster.sh: $name (pid $pid) still alive" >&2
            status=1
        else
            echo "stop_cluster.sh: stopped $name (pid $pid)"
            rm -f "$state_dir/$name.pid"
        fi
    done
}

# munged last: the SLURM daemons may still authenticate while shutting down.
stop_daemons slurmd slurmctld
stop_daemons munged
exit "$status"
