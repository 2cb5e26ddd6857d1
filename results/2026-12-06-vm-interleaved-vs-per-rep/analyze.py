#!/usr/bin/env python3
"""Spread of each arm's log ratio to untuned, per design, and the wall time each design
needs for a 1 % standard error. Reads DIR/interleaved/run.json, DIR/per-rep/run.json and
each run's own clock (environment.before.at to .after.at: from the first load's setup to
the last load's end, after the quiet-machine gate); prints a markdown table (output.txt)."""
import json, math, sys, statistics as st
from datetime import datetime

d = sys.argv[1] if len(sys.argv) > 1 else "."

def wall_of(run):
    at = lambda e: datetime.fromisoformat(e["at"].replace("Z", "+00:00"))
    env = run["environment"]
    return (at(env["after"]) - at(env["before"])).total_seconds()

def ratios(run, arm, base):
    by = {}
    for r in run["runs"]:
        if r.get("failed") or not r.get("req_per_s"):
            continue
        by[(r["rep"], r.get("arm", r["mode"]))] = r["req_per_s"]
    out = []
    for rep in range(run["reps"]):
        if (rep, arm) in by and (rep, base) in by:
            out.append(math.log(by[(rep, arm)] / by[(rep, base)]))
    return out

print("| design | arm / base | pairs | geo-mean ratio | sd of log ratio | wall s per repetition | wall time for a 1 % standard error |")
print("|---|---|---|---|---|---|---|")
for name in ["interleaved", "per-rep"]:
    run = json.load(open(f"{d}/{name}/run.json"))
    per_rep = wall_of(run) / run["reps"]
    for arm, base in [("rps", "none"), ("cpumap", "none"), ("none", "none-nobpf")]:
        v = ratios(run, arm, base)
        sd = st.stdev(v)
        need = (sd / 0.01) ** 2  # pairs for a standard error of 0.01 in the log ratio
        print(f"| {name} | {arm} / {base} | {len(v)} | {math.exp(st.mean(v)):.3f}x | {sd:.3f} | {per_rep:.1f} | {need * per_rep / 60:.0f} min |")
    sw = [r["switch_ms"] for r in run["runs"] if r.get("switch_ms") is not None]
    if sw:
        print(f"\n{name}: switch into an arm, median {st.median(sw):.0f} ms, range {min(sw):.0f}-{max(sw):.0f} ms over {len(sw)} switches\n")

# Did the settle cover the switch? In every interleaved window, the first live line against
# the last: a transient left over from the switch would show as a mean log ratio away from 0.
run = json.load(open(f"{d}/interleaved/run.json"))
lives = {}
diffs = {}
for r in run["runs"]:
    if not r.get("window_at"):
        continue
    key = (r["proto"], r["rep"])
    if key not in lives:
        lives[key] = [json.loads(l) for l in open(f"{d}/interleaved/live-cycle-{r['proto']}-rep{r['rep']}.jsonl")]
    frm, to = r["window_at"]
    ls = [l for l in lives[key] if frm + 1e-9 < l["t_s"] <= to + 1e-9]
    if len(ls) >= 2 and ls[0]["req_per_s"] > 0 and ls[-1]["req_per_s"] > 0:
        diffs.setdefault(r["arm"], []).append(math.log(ls[0]["req_per_s"] / ls[-1]["req_per_s"]))
print("| arm | windows | first live line / last, geo-mean | sd | standard error |")
print("|---|---|---|---|---|")
for arm, v in diffs.items():
    print(f"| {arm} | {len(v)} | {math.exp(st.mean(v)):.3f}x | {st.stdev(v):.3f} | {st.stdev(v) / math.sqrt(len(v)):.3f} |")
