#!/usr/bin/env bash
# Install the Debian packages the local test SLURM cluster needs.
#
# Idempotent: exits 0 without touching apt when everything is installed.
# Needs root and apt-get otherwise. Exit status: 0 ok, 1 cannot install.
#
# The package maintainer scripts try to start the system munge/slurm
# services; in a container without an init system they are refused
# ("policy-rc.d denied execution"), which is fine: start_cluster.sh runs its
# own daemons with their own config, socket and ports.
set -euo pipefail

packages=(munge slurmctld slurmd slurm-client)
binaries=(munged munge slurmctld slurmd sbatch squeue sinfo scontrol scancel)

is_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
    for pkg in "${packages[@]}"; do
        is_installed "$pkg" || missing+=("$pkg")
    done
else
    # No dpkg: only the binaries can tell.
    for bin in "${binaries[@]}"; do
        if ! command -v "$bin" >/dev/null 2>&1; then
            missing=("${packages[@]}")
            break
        fi
    done
fi

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install.sh: SLURM and munge already installed"
    exit 0
fi

if [[ $EUID -ne 0 ]]; then
    echo "install.sh: missing ${missing[*]} and not root, cannot apt-get install" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install.sh: missing ${missing[*]} and apt-get is not available" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "install.sh: installing ${missing[*]}"
if ! apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    # A fresh machine may have no package lists yet.
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

for bin in "${binaries[@]}"; do
    if ! command -v "$bin" >/dev/null 2>&1; then
        echo "install.sh: $bin still missing after apt-get install" >&2
        exit 1
    fi
done
echo "install.sh: done"
