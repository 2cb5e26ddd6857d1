#!/bin/bash
# Noise of adjacent windows: a plain veth pair, server on CPU 1, load on CPU 0, 1 s live lines.
set -e
# Run from the repository root, after `cargo xtask build`.
B=target/release
ip netns add nz-s; ip netns add nz-c
ip link add nzs type veth peer name nzc
ip link set nzs netns nz-s; ip link set nzc netns nz-c
ip -n nz-s addr add 10.77.0.1/24 dev nzs; ip -n nz-c addr add 10.77.0.2/24 dev nzc
ip -n nz-s link set nzs up; ip -n nz-c link set nzc up; ip -n nz-s link set lo up; ip -n nz-c link set lo up
ip netns exec nz-s taskset -c 1 $B/rxsteer serve --http 10.77.0.1:8080 --threads 1 > /tmp/nz-serve.log 2>&1 &
S=$!
sleep 1
ip netns exec nz-c taskset -c 0 $B/rxload http://10.77.0.1:8080/health -c 32 -t 1 -d ${DUR:-60s} --warmup 2s --live /tmp/nz-live.jsonl --live-interval 1s > /tmp/nz-load.txt 2>&1 || true
kill $S; wait $S 2>/dev/null || true
ip netns del nz-s; ip netns del nz-c
