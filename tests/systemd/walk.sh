#!/usr/bin/env bash
# Walks README.md as a newcomer with a root shell would: its Install block, then quick starts
# 1 (link the library), 2 (`vclock run`) and 3 (vclockd under systemd), every command as
# written and timed, inside a container that boots a real systemd as its PID 1:
# systemd-nspawn --boot on an overlay of / whose upper layer is a tmpfs. Nothing is installed
# on this machine, the container's /run (and its /run/vclock) is its own, and nothing runs
# after the walk: the container is powered off and its mounts vanish with their namespace.
# Then it checks what the README promises: vclockd active under systemd, /run/vclock/page
# published, `vclock status` attached to it (source shared).
#
# Not in ctest or CI: it needs root, systemd-nspawn (apt-get install systemd-container) and
# overlayfs, and minutes where build/install is not built yet (README's build runs in the
# container, into the tmpfs; an up-to-date build/install of the host is reused as is).
# The container boots to basic.target, with no network of its own (--private-network): the
# host's own services (a database, say) do not start in it.
#
# Usage: tests/systemd/walk.sh          Exit: 0 every command and check passed, 1 one failed,
#                                             77 skipped (not root, no systemd-nspawn).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

if [[ ${VCLOCK_WALK_INSIDE:-} != 1 ]]; then
  if [[ $(id -u) != 0 ]]; then
    echo "walk: skipped: needs root (a container that boots systemd)"
    exit 77
  fi
  if ! command -v systemd-nspawn >/dev/null || [[ ! -x /lib/systemd/systemd ]]; then
    echo "walk: skipped: no systemd-nspawn or systemd (apt-get install systemd-container)"
    exit 77
  fi
  # nspawn leaves /run/systemd/nspawn behind on a /run that is not a tmpfs: removed after,
  # when the walk made it.
  had_nspawn_dir=false
  [[ -e /run/systemd/nspawn ]] && had_nspawn_dir=true
  rc=0
  VCLOCK_WALK_INSIDE=1 unshare --mount --propagation private "$0" "$@" || rc=$?
  $had_nspawn_dir || rm -rf /run/systemd/nspawn
  exit $rc
fi

# --- Inside a private mount namespace: the overlay, the container, the walk ---------------
scratch=$(mktemp -d /tmp/vclock-walk.XXXXXX)
mount -t tmpfs tmpfs "$scratch"
mkdir "$scratch/upper" "$scratch/work" "$scratch/root" "$scratch/steps"
mount -t overlay overlay \
  -o "lowerdir=/,upperdir=$scratch/upper,workdir=$scratch/work" "$scratch/root"
# The repository, when it is not on the root file system, over its own tmpfs-backed overlay.
repo_overlay=()
if [[ $(findmnt -n -o TARGET --target "$repo") != / ]]; then
  repo_overlay=(--overlay="$repo::$repo")
fi

# README.md cut into steps: NN.sh, one command each (continuation lines joined), and the
# files of quick start 1 (<!-- file: NAME --> blocks) under files/.
python3 - "$repo/README.md" "$scratch/steps" <<'PY'
import os, re, sys
readme, out = sys.argv[1], sys.argv[2]
lines = open(readme, encoding="utf-8").read().split("\n")
os.makedirs(os.path.join(out, "files"))
wanted = [("install", r"^## Install"), ("link", r"^\*\*1\. "), ("run", r"^\*\*2\. "),
          ("systemd", r"^\*\*3\. ")]
n = 0
for name, start in wanted:
    i = next(k for k, l in enumerate(lines) if re.match(start, l))
    # The first ```sh block after the start, and the file blocks before it.
    while True:
        i += 1
        m = re.match(r"^```(\w*)", lines[i])
        if not m:
            continue
        j = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("```"))
        marker = re.match(r"^<!--\s*file:\s*(\S+)\s*-->", lines[i - 1])
        if marker:
            with open(os.path.join(out, "files", marker.group(1)), "w") as f:
                f.write("\n".join(lines[i + 1:j]) + "\n")
        elif m.group(1) == "sh":
            break
        i = j
    command = ""
    for k, line in enumerate(lines[i + 1:j], start=i + 2):
        command += line
        if command.endswith("\\"):
            command = command[:-1] + " "
            continue
        if command.strip():
            with open(os.path.join(out, f"{n:02d}.sh"), "w") as f:
                f.write(f"# {name} README.md:{k}\n{command}\n")
            n += 1
        command = ""
PY

# The README's files of quick start 1, in the working directory of the quick starts.
mkdir -p "$scratch/root/root/walk"
cp -r "$scratch/steps/files/." "$scratch/root/root/walk/"

nspawn_pid=
cleanup() {
  if [[ -n $nspawn_pid ]] && kill -0 "$nspawn_pid" 2>/dev/null; then
    kill -TERM "$nspawn_pid" 2>/dev/null || true # nspawn powers the container off
    for _ in $(seq 1 60); do
      kill -0 "$nspawn_pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL "$nspawn_pid" 2>/dev/null || true
    wait "$nspawn_pid" 2>/dev/null || true
  fi
  umount -l "$scratch/root" 2>/dev/null || true
  umount -l "$scratch" 2>/dev/null || true
  rmdir "$scratch" 2>/dev/null || true
}
trap cleanup EXIT

machine=vclock-walk-$$
systemd-nspawn --quiet -D "$scratch/root" "${repo_overlay[@]}" --boot --register=no \
  --keep-unit --private-network --console=passive --machine="$machine" \
  --uuid="$(cat /proc/sys/kernel/random/uuid)" systemd.unit=basic.target \
  >"$scratch/nspawn.log" 2>&1 &
nspawn_pid=$!

# The container's PID 1 is nspawn's child; systemd says when its boot is done.
leader=
for _ in $(seq 1 120); do
  leader=$(pgrep -P "$nspawn_pid" | head -1 || true)
  [[ -n $leader ]] && break
  kill -0 "$nspawn_pid" 2>/dev/null || break
  sleep 0.5
done
in_container() {
  nsenter -t "$leader" -a env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM=dumb "$@"
}
state="no PID 1"
if [[ -n $leader ]]; then
  state=$(timeout 120 nsenter -t "$leader" -a systemctl is-system-running --wait 2>&1 || true)
fi
if [[ $state != running && $state != degraded ]]; then
  echo "walk: FAILED: systemd did not boot in the container ($state)"
  sed 's/^/  > /' "$scratch/nspawn.log"
  exit 1
fi
echo "walk: systemd booted in the container ($state)"
# nspawn gives the container a boot id of its own, bound over /proc/sys/kernel/random/boot_id;
# vclockd's unit (ProtectProc=) mounts a procfs of its own, which shows the kernel's. The page
# records the daemon's, so every reader here would refuse it ("page is from another boot"), as
# no reader on a machine booted with systemd does: the walk takes the overmount away.
while in_container mountpoint -q /proc/sys/kernel/random/boot_id; do
  in_container umount /proc/sys/kernel/random/boot_id
done

# Each step in a root shell's working directory: the repository for the install, the
# quick starts' directory (/root/walk) for the others.
failed=0
for step in "$scratch"/steps/*.sh; do
  where=$(head -1 "$step")
  command=$(tail -n +2 "$step")
  case $where in
    "# install"*) dir=$repo ;;
    *) dir=/root/walk ;;
  esac
  start=$(date +%s%N)
  rc=0
  in_container timeout 600 bash -o pipefail -c "cd '$dir' && $command" >"$scratch/out" 2>&1 || rc=$?
  tenths=$((($(date +%s%N) - start) / 100000000))
  printf '%s %4d.%d s  %s\n' "$( ((rc == 0)) && echo ok || echo "FAILED (exit $rc)")" \
    $((tenths / 10)) $((tenths % 10)) "$command"
  if ((rc != 0)); then
    echo "  at ${where#\# }; output:"
    sed 's/^/  > /' "$scratch/out" | tail -30
    failed=$((failed + 1))
  elif [[ $where == "# systemd"* ]]; then
    sed 's/^/  > /' "$scratch/out" | head -12
  fi
done

# What the README promises once its steps are done.
check() {
  local what=$1
  shift
  if in_container "$@" >"$scratch/out" 2>&1; then
    echo "ok: $what"
  else
    echo "FAILED: $what"
    sed 's/^/  > /' "$scratch/out" | tail -20
    failed=$((failed + 1))
  fi
}
check "vclockd is active under systemd" systemctl is-active --quiet vclockd
check "/run/vclock/page is published" test -s /run/vclock/page
check "vclock status reads the daemon's page" \
  sh -c 'vclock status | grep -E "source +shared" && vclock status | grep -F /run/vclock/page'
# shellcheck disable=SC2016 # expanded by the container's shell
check "the daemon runs as vclock, with no capabilities" \
  sh -c 'pid=$(systemctl show -P MainPID vclockd) && [ "$(stat -c %U /proc/$pid)" = vclock ] &&
         grep -q "^CapEff:[[:space:]]*0*$" /proc/$pid/status'

if ((failed)); then
  echo "walk: $failed failed"
  exit 1
fi
echo "walk: every README command and check passed, in a container booted with systemd"
