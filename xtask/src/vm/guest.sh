#!/bin/busybox sh
# rxsteer's guest init (PID 1), written into the initramfs by `cargo xtask vm`. It gathers
# evidence; the host judges it (xtask/src/vm/judge.rs). Every line for the host starts with
# "RXVM ": "RXVM check NAME pass|fail|refused DETAIL", "RXVM data NAME VALUE" or
# "RXVM json NAME {...}". Traffic stays inside the guest: the loader is in a namespace on the
# second NIC, wired only to the first one.
# busybox's applets last on PATH: Debian's ip, tc, ethtool and taskset come first.
/bin/busybox mkdir -p /bb /proc /sys /dev /tmp /run /var
/bin/busybox --install -s /bb
export PATH=/rxsteer:/usr/sbin:/usr/bin:/sbin:/bin:/bb
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
ln -s /run /var/run
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# Warnings and worse reach the console (a soft lockup's stack trace among them).
dmesg -n 5
. /rxsteer/vm.env
# Debian's busybox runs its own applets before PATH (standalone shell): the tools rxsteer
# uses are named by path, as rxsteer itself finds them.
ip() { /bin/ip "$@"; }
tc() { /sbin/tc "$@"; }
taskset() { /usr/bin/taskset "$@"; }

say() { echo "RXVM $*"; }
oneline() { tr '\n' '|' | cut -c1-600; }
# check NAME COMMAND...: pass when it exits 0, else fail with its last lines.
check() {
  name=$1; shift
  if out=$("$@" 2>&1); then say check "$name" pass "$(echo "$out" | tail -1 | oneline)"
  else say check "$name" fail "rc=$? $(echo "$out" | tail -4 | oneline)"; fi
}
finish() { say done; sync; poweroff -f; }

say boot "kernel=$(uname -r) arch=$(uname -m) cpus=$(nproc)"
depmod
for m in $VM_MODULES; do modprobe "$m" 2>/dev/null; done
say data modules "$(cut -d' ' -f1 /proc/modules | tr '\n' ' ')"

# The two NICs: the first stays here (the server's), the second goes to the loader's namespace.
nics=$(ls /sys/class/net | grep -v '^lo$' | sort)
set -- $nics
if [ $# -lt 2 ]; then say check nics fail "two NICs expected, found: $nics"; finish; fi
SRV=$1; CLI=$2
say data driver "$(basename "$(readlink /sys/class/net/$SRV/device/driver)")"
say data ethtool "$(ethtool -i "$SRV" 2>&1 | oneline)"
say data queues "rx=$(ls -d /sys/class/net/$SRV/queues/rx-* | wc -l) tx=$(ls -d /sys/class/net/$SRV/queues/tx-* | wc -l)"
sysctl -qw net.ipv6.conf.all.disable_ipv6=1
sysctl -qw net.ipv6.conf.default.disable_ipv6=1
ip link set lo up
ip netns add client
ip link set "$CLI" netns client
ip -n client link set lo up
ip netns exec client sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ip addr add 10.199.0.1/24 dev "$SRV"
ip link set "$SRV" up
ip -n client addr add 10.199.0.2/24 dev "$CLI"
ip -n client link set "$CLI" up
up=0
for i in 1 2 3 4 5 6 7 8 9 10; do
  if ip netns exec client ping -c 1 -W 1 10.199.0.1 >/dev/null 2>&1; then up=1; break; fi
done
if [ $up = 0 ]; then say check link fail "no ping across the wire: $(ip -br link | oneline)"; finish; fi
say check link pass "$SRV <-> $CLI"

rxsteer serve --http 10.199.0.1:8080 --zap 10.199.0.1:9653 --threads 1 >/tmp/serve.log 2>&1 &
serve=$!
sleep 1
load() { ip netns exec client rxload "http://10.199.0.1:8080/health" -c 2 -t 1 -n "$1" --warmup 0s; }
check serve load 50

# Every program loads (the observer's, then cpumap's below); the verifier's words on failure.
# Counting: rxsteer top's per-CPU packets against the driver's own rx_packets, over a window
# with only our load on the wire.
# under NAME COMMAND...: runs an observing command (JSON lines) in the background, the load
# once it has begun, and reports its exit, the load's, its stderr (whole, for the stored
# console: a verifier's log runs to hundreds of lines) and its samples.
under() {
  name=$1; shift
  "$@" --json --count "$VM_TOP_INTERVALS" --interval 1s >/tmp/$name.json 2>/tmp/$name.err &
  pid=$!
  for i in $(seq 50); do [ -s /tmp/$name.json ] && break; sleep 0.2; done
  load "$VM_REQUESTS" >/tmp/load.out 2>&1
  say data $name-load-rc $?
  wait $pid
  say data $name-rc $?
  say data $name-stderr "$(oneline </tmp/$name.err)"
  sed "s/^/RXVM log $name: /" /tmp/$name.err
  while read -r l; do say json $name "$l"; done </tmp/$name.json
}
# The receive interrupt, a real one here (veth has none): rxsteer writes no IRQ affinity, so
# this script pins the NIC's RX vector to the last CPU for top's window (and puts it back), and
# top must find the driver's receive on that CPU. Vectors: e1000 "eth0" (RX and TX on one),
# e1000e "eth0-rx-0", virtio-net "virtioN-input.0".
vdev=$(basename "$(readlink /sys/class/net/$SRV/device)")
irq_of() { awk -v n="$1" '$NF == n { sub(":", "", $1); print $1; exit }' /proc/interrupts; }
rxirq=$(irq_of "$SRV-rx-0")
[ -n "$rxirq" ] || rxirq=$(irq_of "$vdev-input.0")
[ -n "$rxirq" ] || rxirq=$(irq_of "$SRV")
irq_counts() {
  awk -v i="$rxirq:" -v c="$(nproc)" '$1 == i { s = ""; for (k = 2; k <= c + 1; k++) s = s $k " "; print s }' /proc/interrupts
}
aff0=$(cat /proc/irq/$rxirq/smp_affinity_list 2>/dev/null)
echo "$VM_TARGET_CPU" >/proc/irq/$rxirq/smp_affinity_list 2>/tmp/irq.err
say data rx-irq "$rxirq $(awk -v i="$rxirq:" '$1 == i { print $NF }' /proc/interrupts) pinned=$(cat /proc/irq/$rxirq/smp_affinity_list 2>/dev/null) $(oneline </tmp/irq.err)"
irq0=$(irq_counts)
rx0=$(cat /sys/class/net/$SRV/statistics/rx_packets)
under top rxsteer top --iface "$SRV" --bpf-stats always
rx1=$(cat /sys/class/net/$SRV/statistics/rx_packets)
irq1=$(irq_counts)
say data rx-packets $((rx1 - rx0))
say data rx-irq-counts "$irq0|$irq1"
echo "$aff0" >/proc/irq/$rxirq/smp_affinity_list
say data rx-irq-affinity "before=$aff0 after=$(cat /proc/irq/$rxirq/smp_affinity_list)"

# selftest: rxsteer's figures against the kernel's own counts on this driver (its interrupts
# among them), watching a bounded load it did not send; the report whole, for the host and
# the matrix's store.
ip netns exec client rxload "http://10.199.0.1:8080/health" -c 2 -t 1 -d 40s --warmup 0s >/dev/null 2>&1 &
stload=$!
sleep 1
rxsteer selftest --iface "$SRV" -d 10s --force --json >/tmp/selftest.json 2>/tmp/selftest.err
say data selftest-rc $?
kill $stload 2>/dev/null; wait $stload 2>/dev/null
sed "s/^/RXVM log selftest: /" /tmp/selftest.err
say json selftest "$(tr -d '\n' </tmp/selftest.json)"

# XDP mode: auto must choose by itself (skb without native XDP), drv must be refused there.
under attach rxsteer attach --iface "$SRV" --steer cpumap --http-cpus "$VM_TARGET_CPU" \
  --zap-cpus 0 --other-cpus 0 --xdp-mode auto
say data xdp-after "$(ip -d link show "$SRV" | grep -c prog/xdp)"
rxsteer attach --iface "$SRV" --steer cpumap --xdp-mode drv --count 1 >/tmp/drv.out 2>&1
say data drv-rc $?
say data drv-out "$(oneline </tmp/drv.out)"

# Tuning the real queue: every value written, then put back byte for byte.
values() {
  for f in /sys/class/net/$SRV/queues/rx-*/rps_cpus /sys/class/net/$SRV/queues/rx-*/rps_flow_cnt \
    /sys/class/net/$SRV/queues/tx-*/xps_cpus /proc/sys/net/core/rps_sock_flow_entries; do
    [ -r "$f" ] && echo "$f=$(cat "$f" 2>/dev/null)"
  done
  for f in threaded napi_defer_hard_irqs gro_flush_timeout; do
    [ -r /sys/class/net/$SRV/$f ] && echo "$f=$(cat /sys/class/net/$SRV/$f)"
  done
  # Each NAPI instance's IRQ suspension (netlink only, 6.13), as tune reads it.
  rxsteer tune show --iface "$SRV" --profile busy-poll 2>/dev/null |
    awk '/irq-suspend-timeout/ {$1 = $1; print}'
  # NAPI kthreads pinned anywhere but where a new kthread starts (kthreadd's CPUs): one a
  # session left pinned. The kernel may keep an unpinned one after threaded goes off (6.1).
  fresh=$(grep Cpus_allowed_list /proc/2/status | cut -f2)
  for d in /proc/[0-9]*; do
    comm=$(cat $d/comm 2>/dev/null)
    case "$comm" in napi/$SRV-*)
      c=$(grep Cpus_allowed_list $d/status | cut -f2)
      [ "$c" != "$fresh" ] && echo "$comm=$c" ;;
    esac
  done
  true
}
say data tune-before "$(values | oneline)"
rxsteer tune apply --iface "$SRV" --profile rps >/tmp/tune.out 2>&1
say data tune-apply-rc $?
say data tune-applied "$(values | oneline)"
rxsteer restore >>/tmp/tune.out 2>&1
say data tune-restore-rc $?
say data tune-restored "$(values | oneline)"
say data tune-out "$(oneline </tmp/tune.out)"
# busy-poll's interrupt deferral, and from 6.13 each NAPI instance's IRQ suspension (netlink).
rxsteer tune apply --iface "$SRV" --profile busy-poll >/tmp/tune-busy.out 2>&1
say data tune-busy-rc $?
say data tune-busy-applied "$(values | oneline)"
rxsteer restore >>/tmp/tune-busy.out 2>&1
say data tune-busy-restored "$(values | oneline)"
say data tune-busy-out "$(oneline </tmp/tune-busy.out)"

# The one queue's own levers, read back by ethtool and procfs (not by rxsteer): the reference
# tuning's rings at their maximum and offloads on, a coalescing value and the interrupt moved
# to the target CPU; restore puts every one back. Then the same in a session killed with
# SIGKILL, put back by restore.
levers() {
  echo "ring $(ethtool -g "$SRV" 2>&1 | awk '/^Current/ {c=1} c && /^(RX|TX):/ {printf "%s%s ", $1, $2}')"
  echo "coalesce $(ethtool -c "$SRV" 2>&1 | awk '/^rx-usecs:|^rx-frames:/ {printf "%s%s ", $1, $2}')"
  echo "offloads $(ethtool -k "$SRV" | awk '/^(generic-receive-offload|generic-segmentation-offload|tcp-segmentation-offload):/ {printf "%s%s ", $1, $2}')"
  echo "irq $rxirq=$(cat /proc/irq/$rxirq/smp_affinity_list 2>&1)"
  echo "governor $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1 | head -1)"
}
# GRO off first (the driver's default is on), so that the reference's "offloads on" has
# something to change and restore has something to put back; on again at the end.
ethtool -K "$SRV" gro off 2>/dev/null
say data levers-before "$(levers | oneline)"
say data levers-max "$(ethtool -g "$SRV" 2>&1 | awk '/^Pre-set/ {c=1} /^Current/ {c=0} c && /^(RX|TX):/ {printf "%s%s ", $1, $2}')"
rxsteer tune apply --iface "$SRV" --profile reference --irq-cpu "$VM_TARGET_CPU" --coalesce rx-usecs=50 >/tmp/levers.out 2>&1
say data levers-rc $?
say data levers-applied "$(levers | oneline)"
li0=$(irq_counts)
load 300 >/dev/null 2>&1
li1=$(irq_counts)
say data levers-irq-counts "$li0|$li1"
rxsteer restore >>/tmp/levers.out 2>&1
say data levers-restore-rc $?
say data levers-restored "$(levers | oneline)"
# The lever lines only (the sysctls would push them past the line's length).
say data levers-out "$(grep -E 'rings|coalescing|offloads|IRQ|governor|link went down|drift' /tmp/levers.out | oneline)"
rxsteer attach --iface "$SRV" --steer reference --irq-cpu "$VM_TARGET_CPU" --coalesce rx-usecs=50 --json >/dev/null 2>/tmp/lk.err &
lk=$!
for i in $(seq 100); do grep -q observing /tmp/lk.err 2>/dev/null && break; sleep 0.2; done
say data levers-crash-applied "$(levers | oneline)"
kill -9 $lk; wait $lk 2>/dev/null
rxsteer restore >/tmp/lk.out 2>&1
say data levers-crash-restored "$(levers | oneline)"
say data levers-crash-out "$(oneline </tmp/lk.err) $(oneline </tmp/lk.out)"
ethtool -K "$SRV" gro on 2>/dev/null

# Busy polling as the server takes it (`serve --busy-poll`): refused in one line before
# Linux 6.9, serving with it from there.
rxsteer serve --http 10.199.0.1:8081 --zap 10.199.0.1:9654 --threads 1 --busy-poll 50 >/tmp/busy.log 2>&1 &
busy=$!
sleep 1
if kill -0 $busy 2>/dev/null; then
  ip netns exec client rxload "http://10.199.0.1:8081/health" -c 2 -t 1 -n 50 --warmup 0s >/dev/null 2>&1
  say data busy-poll-load $?
  kill $busy; wait $busy 2>/dev/null
  say data busy-poll-started 1
else
  wait $busy; say data busy-poll-rc $?
  say data busy-poll-started 0
fi
say data busy-poll-out "$(oneline </tmp/busy.log)"

# The main job on the real NIC, as a user runs it (`cargo xtask run --iface` runs this): every
# arm, both protocols, one short repetition, the load from the namespace across the wire. Its
# own servers take the ports: ours goes first.
kill $serve; wait $serve 2>/dev/null
# compare_on NAME FLAGS...: one comparison, its report and run.json sent to the host.
compare_on() {
  name=$1; shift
  # --closed: a capacity search is load-bound arithmetic, which TCG makes meaningless and
  # slow; the guest proves the kernel side (the search itself is the lab's to test).
  rxsteer compare --iface "$SRV" --loader netns:client --closed --reps "${VM_COMPARE_REPS:-1}" -d "$VM_COMPARE_MEASURE" \
    --warmup 500ms -c 4 --force --no-tui --out /tmp/$name "$@" >/tmp/$name.out 2>&1
  say data $name-rc $?
  sed "s/^/RXVM log $name: /" /tmp/$name.out
  say data $name-files "$(ls /tmp/$name 2>/dev/null | grep -c .)"
  # Loads whose loader served nothing (the report lists them first; the run went on).
  say data $name-failed "$(awk '/^## Loads that failed/ {t=1; next} /^## / {t=0} t && /^- /' \
    /tmp/$name/report.md 2>/dev/null | oneline)"
  sed "s/^/RXVM file $name\/report.md /" /tmp/$name/report.md 2>/dev/null
  # run.json on one line: JSON keeps newlines inside strings escaped, so none is lost.
  [ -s /tmp/$name/run.json ] && echo "RXVM file $name/run.json $(tr -d '\n' </tmp/$name/run.json)"
}
compare_on compare
# What the report says it ran on: the machine line, the interface line and each arm's XDP mode
# (the last column of the table of where the receive work went).
say data report-machine "$(grep -m1 '^Machine:' /tmp/compare/report.md)"
say data report-iface "$(grep -m1 '^Interface driver' /tmp/compare/report.md)"
# The backlog in threads (a kernel booted with thread_backlog_napi): its kthreads, and whether
# the report says every arm ran with them.
say data backlog-threads "$(cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^backlog_napi/')"
say data report-backlog "$(grep -c 'runs the backlog in threads' /tmp/compare/report.md)"
# The flow dissector on a NIC without RXHASH: each rps-dissector row's runs of it per second
# and the packets the interface received per second (run.json, on one line).
say data dissector "$(tr -d ' \n' </tmp/compare/run.json 2>/dev/null |
  grep -o '"name":"rps_by_service","runs_per_s":[0-9.]*' | sed 's/.*://' | oneline)"
say data report-xdp "$(awk -F'|' '/XDP mode \|$/ {t=1} /^$/ {t=0} t && /^\| XDP cpumap \|/ {print $(NF-1)}' \
  /tmp/compare/report.md | tr -d ' ' | sort -u | oneline)"
# The 64 KiB upload over HTTP: frames and skbs per request on a real driver, for the lab's
# comparison (docs/vm.md).
compare_on upload --proto http --scenario upload
say data upload-per-request "$(awk '/^## / { t = ($0 ~ /Frames and skbs per request/) } t && /^\| / && !/^\| arm/ && !/^\|---/' /tmp/upload/report.md | oneline)"
say data compare-left "$(ip -d link show "$SRV" | grep -c prog/xdp) $(values | oneline)"

# The NIC's own drops: the upload, untuned, over a ring kept at the driver's smallest (1
# asked: the driver rounds it up) and then at its maximum; what the report counts at each.
# The interrupt's CPUs are kept as they are (irq-affinity to where it already goes).
for ring in 1 max; do
  rxsteer tune apply --iface "$SRV" --profile irq-affinity --irq-cpu "$(cat /proc/irq/$rxirq/smp_affinity_list)" --ring $ring >/tmp/ring.out 2>&1
  say data ring-$ring-set "rc=$? rx=$(ethtool -g "$SRV" | awk '/^Current/ {c=1} c && /^RX:/ {print $2}')"
  compare_on ring-$ring --steer none --proto http --scenario upload
  say data ring-$ring-drops "$(tr -d ' \n' </tmp/ring-$ring/run.json 2>/dev/null | grep -o '"nic_drops":{"counters":{[^}]*},"driver":{[^}]*}}' | oneline)"
  say data ring-$ring-said "$(grep -o 'lost [0-9]* packets at the NIC[^.]*' /tmp/ring-$ring/report.md | head -1)"
  rxsteer restore >/dev/null 2>&1
done

# The root test suites that load BPF (xtask/src/vm/suites.rs), their ignored tests included:
# every program through this kernel's verifier, JIT and BPF_PROG_TEST_RUN.
for t in /rxsteer/tests/*; do
  [ -x "$t" ] || continue
  n=$(basename "$t")
  "$t" --include-ignored --test-threads 1 >/tmp/suite.out 2>&1
  rc=$?
  sed "s/^/RXVM log suite $n: /" /tmp/suite.out
  if [ $rc = 0 ]; then say check "suite:$n" pass "$(grep '^test result' /tmp/suite.out | oneline)"
  else say check "suite:$n" fail "rc=$rc $(grep -E '^test .* FAILED|^test result|panicked' /tmp/suite.out | oneline)"; fi
done
finish
