#!/bin/bash
# A/A: untuned against untuned, measured the two ways issue #46 weighs. A plain veth pair in
# two namespaces, `rxsteer serve` (epoll, one worker) on CPU 1, rxload /health (32
# connections, closed loop) on CPU 0, no BPF program attached, nothing else running.
#  per-rep:     the comparison's way: each load its own server and rxload (1 s warm-up, 4 s
#               measured), A and B alternating, one A/B pair per "repetition".
#  interleaved: one server and one continuous load; 0.5-s live lines, labelled A A s B B s
#               (s: a settle window after each switch, dropped), so each pair is 1 s of A
#               beside 1 s of B, 1 s apart.
# Both run for about the same wall time. Run from the repository root after `cargo xtask
# build`; writes per-rep.txt, interleaved.jsonl and the loads' own output beside this file.
set -euo pipefail
B=target/release
D="$(dirname "$0")"
PAIRS=${PAIRS:-30}
cleanup() { ip netns del aa-s 2>/dev/null || true; ip netns del aa-c 2>/dev/null || true; }
trap cleanup EXIT
cleanup
ip netns add aa-s; ip netns add aa-c
ip link add aas type veth peer name aac
ip link set aas netns aa-s; ip link set aac netns aa-c
ip -n aa-s addr add 10.78.0.1/24 dev aas; ip -n aa-c addr add 10.78.0.2/24 dev aac
for n in aa-s aa-c; do ip -n $n link set lo up; done
ip -n aa-s link set aas up; ip -n aa-c link set aac up
serve() { ip netns exec aa-s taskset -c 1 $B/rxsteer serve --http 10.78.0.1:8080 --threads 1 >/dev/null 2>&1 & echo $!; }
load() { ip netns exec aa-c taskset -c 0 $B/rxload http://10.78.0.1:8080/health -c 32 -t 1 "$@"; }
: > "$D/per-rep.txt"
start=$(date +%s)
for k in $(seq 1 $((2 * PAIRS))); do
  arm=$([ $((k % 2)) -eq 1 ] && echo A || echo B)
  s=$(serve); sleep 0.5
  load -d 4s --warmup 1s --json /tmp/aa-load.json >/dev/null 2>&1 || true
  rps=$(python3 -c 'import json; print(json.load(open("/tmp/aa-load.json"))["req_per_s"])')
  kill $s; wait $s 2>/dev/null || true
  echo "$arm $rps" >> "$D/per-rep.txt"
done
per_rep_s=$(( $(date +%s) - start ))
s=$(serve); sleep 0.5
load -d "${per_rep_s}s" --warmup 1s --live "$D/interleaved.jsonl" --live-interval 500ms > "$D/interleaved-rxload.txt" 2>&1 || true
kill $s; wait $s 2>/dev/null || true
echo "per-rep took ${per_rep_s} s; the interleaved load ran as long"
echo "$per_rep_s" > "$D/per-rep-seconds.txt"
