#!/usr/bin/env bash
# Interleaved against per repetition, the same arms (untuned, RPS, XDP cpumap, untuned with no
# BPF) over HTTP /health, closed loop, 32 connections, each design given about the same wall
# time. From the repository root after `cargo build --release -p rxsteer -p rxload`.
set -euo pipefail
D=results/2026-12-06-vm-interleaved-vs-per-rep
R=target/release/rxsteer
start=$(date +%s)
$R compare --interleave --closed --steer none,rps,cpumap --proto http --reps 20 \
  --window 1s --settle 1s --no-tui --out $D/interleaved > $D/interleaved.txt 2>&1
mid=$(date +%s)
$R compare --closed --steer none,rps,cpumap --proto http --reps 10 -d 4s --warmup 1s \
  --no-tui --out $D/per-rep > $D/per-rep.txt 2>&1
end=$(date +%s)
echo "interleaved $((mid-start)) s, per-rep $((end-mid)) s" > $D/wall.txt
