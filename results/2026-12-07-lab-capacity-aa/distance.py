#!/usr/bin/env python3
"""How far each arm's log ratio to untuned strays from that arm's mean, by how many searches
apart the two ran inside their repetition, in a stored multi-arm run. Usage: distance.py
RUN.json (here: results/2026-12-05-vm-lab-reps-auto/run.json)."""
import collections, json, math, statistics, sys

runs = [x for x in json.load(open(sys.argv[1]))["runs"] if x.get("search") and x.get("req_per_s")]
pos, caps = collections.defaultdict(dict), collections.defaultdict(dict)
for x in runs:  # run.json keeps the loads in the order they ran
    k = (x["proto"], x["rep"])
    pos[k][x["arm"]] = len(pos[k])
    caps[k][x["arm"]] = x["req_per_s"]
logs = collections.defaultdict(list)
for (p, _), c in caps.items():
    for a in c:
        if a != "none" and "none" in c:
            logs[(p, a)].append(math.log(c[a] / c["none"]))
print("proto arm reps sd(log ratio to untuned)")
for (p, a), l in sorted(logs.items()):
    print(f"{p} {a} {len(l)} {statistics.stdev(l):.3f}")
dev = collections.defaultdict(list)
for (p, rep), c in caps.items():
    for a in c:
        if a != "none" and "none" in c:
            d = abs(pos[(p, rep)][a] - pos[(p, rep)]["none"])
            m = statistics.mean(logs[(p, a)])
            dev[d].append((math.log(c[a] / c["none"]) - m) ** 2)
print("searches apart, ratios, rms deviation from the arm's mean log ratio")
for d in sorted(dev):
    print(f"{d} {len(dev[d])} {math.sqrt(statistics.mean(dev[d])):.3f}")
