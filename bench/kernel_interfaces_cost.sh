#!/usr/bin/env bash
# What the bwrap backend's protection of the kernel's interfaces costs a run (plugins/bwrap/
# README.md, "Root in the sandbox"): `bwrap ... /bin/true` with the mounts a read-only plan had
# before, and with the read-only binds of /proc/sys, fs, irq, bus, the /dev/null and tmpfs masks
# and the direct launch's /proc/1 mask added, then the kpage* masks too, the variants alternating
# run by run; medians and
# 90th percentiles. Which masks a host gets depends on its kernel: the set below is what this
# script's host (Debian 12, kernel 6.18) has.
#
#   bench/kernel_interfaces_cost.sh [RUNS]
set -euo pipefail
runs="${1:-61}"
work="$(mktemp -d /tmp/sbx-kif-XXXXXX)"
trap 'rm -rf "$work"' EXIT
base=(--unshare-user --unshare-pid --unshare-ipc --unshare-net --ro-bind / / --dev /dev
      --proc /proc)
binds=(--ro-bind /proc/sys /proc/sys --ro-bind /proc/fs /proc/fs --ro-bind /proc/irq /proc/irq
       --ro-bind /proc/bus /proc/bus)
masks=()
for f in /proc/interrupts /proc/keys /proc/timer_list /proc/kcore /proc/sched_debug \
         /proc/latency_stats /proc/timer_stats; do
  [[ -e $f ]] && masks+=(--ro-bind /dev/null "$f")
done
# The physical page files (kpageflags, kpagecount, kpagecgroup), masked since issue #32: a
# variant of their own, so that their share shows.
kpage=()
for f in /proc/kpageflags /proc/kpagecount /proc/kpagecgroup; do
  [[ -e $f ]] && kpage+=(--ro-bind /dev/null "$f")
done
remounts=()
for d in /proc/acpi /proc/asound /proc/scsi /sys/firmware /sys/devices/virtual/powercap /proc/1; do
  [[ -e $d ]] || continue
  masks+=(--perms 0555 --tmpfs "$d")
  remounts+=(--remount-ro "$d")
done
one() {  # NAME bwrap-args...
  local name="$1" t0 t1
  shift
  t0=${EPOCHREALTIME/./}
  bwrap "$@" /bin/true
  t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >> "$work/$name"
}
for ((i = 0; i < runs; i++)); do
  one before "${base[@]}"
  one binds "${base[@]}" "${binds[@]}"
  one all "${base[@]}" "${binds[@]}" "${masks[@]}" "${remounts[@]}"
  one kpage "${base[@]}" "${binds[@]}" "${masks[@]}" "${kpage[@]}" "${remounts[@]}"
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p90() { sort -n | awk '{a[NR]=$1} END {i=int(NR*0.9+0.5); if (i<1) i=1; print a[i]}'; }
echo "runs: $runs alternating; masks: ${masks[*]} ${remounts[*]}; kpage: ${kpage[*]}"
for name in before binds all kpage; do
  printf '%-8s median %6s us   p90 %6s us\n' "$name" "$(median < "$work/$name")" \
         "$(p90 < "$work/$name")"
done
