#!/usr/bin/env bash
# What issue #32 point 2 (no unix datagram reaches a host socket) costs under bwrap (or, with
# BACKEND=landlock, under Landlock): two sbx builds (OLD: before, NEW: after) in one loop,
# alternating, restricted network, only the cwd writable (the policy file outside it: Landlock
# cannot carve it out), direct launch (PWD at the working directory).
#   per run:  `sbx exec -- /bin/true` (a run that makes no datagram socket);
#   per call: inside one run, a python3 loop of N sendmsg on a loopback TCP connection, on a
#             connected loopback UDP socket and on a unix stream socketpair, and N socketpair()
#             of AF_UNIX SOCK_SEQPACKET (never notified) and SOCK_DGRAM (NEW: a round trip to
#             the supervisor, bwrap's or Landlock's metadata guard, which makes a seqpacket pair
#             and installs it; OLD: refused, EPERM).
# Prints medians over ROUNDS rounds and NEW/OLD ratios; the datagram socketpair's cost is also
# given against the seqpacket socketpair of the same run.
# Usage: [BACKEND=landlock] bash bench/unix_datagram.sh OLD/bin/sbx NEW/bin/sbx [ROUNDS] [N]
set -euo pipefail
old=${1:?usage: unix_datagram.sh OLD/bin/sbx NEW/bin/sbx [ROUNDS] [N]}
new=${2:?usage: unix_datagram.sh OLD/bin/sbx NEW/bin/sbx [ROUNDS] [N]}
rounds=${3:-15}
n=${4:-20000}
backend=${BACKEND:-bwrap}
top=$(mktemp -d /var/tmp/sbx-bench-dgram-XXXXXX)
trap 'rm -rf "$top"' EXIT
ws=$top/ws
mkdir "$ws"
cat >"$top/policy.json" <<'EOF'
{"version":1,"filesystem":{"kind":"restricted","entries":[{"path":":root","access":"read"},
 {"path":":cwd","access":"write"}],"protected_names":[]},"network":{"mode":"restricted"}}
EOF
cat >"$ws/loops.py" <<'EOF'
import socket, sys, threading, time
n = int(sys.argv[1])
def per_call(fn, count):
    t = time.perf_counter()
    for _ in range(count):
        fn()
    return (time.perf_counter() - t) / count * 1e6
def drain(s):
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
# Landlock's restricted network has no loopback of its own: no TCP/UDP socket (-1 below).
try:
    srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen()
    c = socket.create_connection(srv.getsockname()); a, _ = srv.accept()
    threading.Thread(target=drain, args=(a,), daemon=True).start()
    tcp = per_call(lambda: c.sendmsg([b'x' * 64]), n)
    u1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u1.bind(('127.0.0.1', 0))
    u2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u2.connect(u1.getsockname())
    threading.Thread(target=drain, args=(u1,), daemon=True).start()
    udp = per_call(lambda: u2.sendmsg([b'x' * 64]), n)
except PermissionError:
    tcp = udp = -1
p, q = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
threading.Thread(target=drain, args=(q,), daemon=True).start()
unix = per_call(lambda: p.sendmsg([b'x' * 64]), n)
pairs = n // 10
def make(kind):
    def f():
        try:
            x, y = socket.socketpair(socket.AF_UNIX, kind); x.close(); y.close()
        except PermissionError:
            pass
    return f
seq = per_call(make(socket.SOCK_SEQPACKET), pairs)
dgram = per_call(make(socket.SOCK_DGRAM), pairs)
print('%.3f %.3f %.3f %.3f %.3f' % (tcp, udp, unix, seq, dgram))
EOF
run() { (cd "$ws" && PWD=$ws "$1" --backends "$backend" exec --policy "$top/policy.json" -- "${@:2}"); }
now_ms() { date +%s%N; }
declare -a true_old true_new loops_old loops_new
for ((i = 0; i < rounds; i++)); do
  for which in old new; do
    sbx=${!which}
    t0=$(now_ms); run "$sbx" /bin/true; t1=$(now_ms)
    eval "true_$which+=($(( (t1 - t0) / 1000 )))"
    eval "loops_$which+=(\"$(run "$sbx" /usr/bin/python3 "$ws/loops.py" "$n")\")"
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
column_of() { local k=$1; shift; for row in "$@"; do echo "$row" | awk -v k="$k" '{print $k}'; done; }
mo=$(median "${true_old[@]}"); mn=$(median "${true_new[@]}")
printf 'backend %s, rounds %d, N %d, load %s\n' "$backend" "$rounds" "$n" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-46s %10s %10s %8s\n' case OLD NEW NEW/OLD
printf '%-46s %8.2fms %8.2fms %8.3f\n' 'run: exec -- /bin/true' "$(echo "$mo/1000" | bc -l)" \
  "$(echo "$mn/1000" | bc -l)" "$(echo "$mn/$mo" | bc -l)"
names=("sendmsg, loopback TCP" "sendmsg, connected loopback UDP" "sendmsg, unix stream pair" \
       "socketpair(AF_UNIX, SOCK_SEQPACKET)" "socketpair(AF_UNIX, SOCK_DGRAM)")
for k in 1 2 3 4 5; do
  o=$(median $(column_of "$k" "${loops_old[@]}")); w=$(median $(column_of "$k" "${loops_new[@]}"))
  [[ $o == -1* ]] && { printf '%-46s %10s\n' "per call: ${names[k-1]}" 'not allowed'; continue; }
  printf '%-46s %8.2fus %8.2fus %8.3f\n' "per call: ${names[k-1]}" "$o" "$w" "$(echo "$w/$o" | bc -l)"
done
seq_new=$(median $(column_of 4 "${loops_new[@]}")); dgram_new=$(median $(column_of 5 "${loops_new[@]}"))
printf 'NEW: a datagram socketpair costs %.2f us more than a seqpacket one (OLD refused it: EPERM)\n' \
  "$(echo "$dgram_new-$seq_new" | bc -l)"
