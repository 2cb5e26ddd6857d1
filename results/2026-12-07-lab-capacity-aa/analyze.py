#!/usr/bin/env python3
"""A/A of the capacity search (#46 item 4). Each directory is one `rxsteer compare --steer none
--proto http --scenario S --reps 6` run, named S-DESIGN-BLOCK. Untuned and untuned with no BPF
run in every repetition, so their log ratio is an A/A pair up to the observer's constant cost;
untuned against itself one repetition later is a second one. For each scenario and design:
the searches, steps per search, loader-bound ends, the pairs, and the sd of each
log ratio, with a 95 % bootstrap interval for sd(design) / sd(old) (pairs resampled, 20,000
draws, seed 1). Every step takes the same time (--step 500ms after 250ms of warm-up, one
rxload started each), so the time for the same standard error scales as sd^2 x steps per
search.
Usage: analyze.py DIR..."""
import collections, json, math, os, random, sys


def sd(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


groups = collections.defaultdict(
    lambda: {"pair": [], "next": [], "steps": [], "loader": 0, "n": 0}
)
for d in sys.argv[1:]:
    scen, design, _blk = os.path.basename(d.rstrip("/")).split("-")
    run = json.load(open(os.path.join(d, "run.json")))
    g = groups[(scen, design)]
    caps = collections.defaultdict(dict)
    for r in run["runs"]:
        s = r.get("search")
        if not s or r.get("req_per_s") is None:
            continue
        caps[r["rep"]][r["arm"]] = r["req_per_s"]
        g["steps"].append(len(s["steps"]))
        g["n"] += 1
        g["loader"] += s["end"]["kind"] == "loader-bound"
    reps = sorted(caps)
    for rep in reps:
        if len(caps[rep]) == 2:
            a, b = sorted(caps[rep])
            g["pair"].append(math.log(caps[rep][a] / caps[rep][b]))
    for arm in sorted({a for c in caps.values() for a in c}):
        series = [caps[r][arm] for r in reps if arm in caps[r]]
        g["next"] += [math.log(y / x) for x, y in zip(series, series[1:])]


def ratio_ci(xs, ys, draws=20000, seed=1):
    rnd = random.Random(seed)
    rs = sorted(
        sd([rnd.choice(xs) for _ in xs]) / sd([rnd.choice(ys) for _ in ys]) for _ in range(draws)
    )
    return rs[int(0.025 * draws)], rs[int(0.975 * draws)]


print(
    "scenario design searches steps/search loader-bound pairs "
    "sd(untuned/no-BPF) vs-old[95%] sd(next/this) vs-old[95%] time-for-same-SE-vs-old"
)
for (scen, design), g in sorted(groups.items()):
    old = groups[(scen, "old")]
    line = (
        f"{scen:8} {design:6} {g['n']:4} {sum(g['steps']) / len(g['steps']):6.2f} "
        f"{g['loader']:4} {len(g['pair']):4} "
    )
    for key in ("pair", "next"):
        s = sd(g[key])
        if design == "old":
            line += f"{s:7.3f}  -            "
        else:
            lo, hi = ratio_ci(g[key], old[key])
            line += f"{s:7.3f}  {s / sd(old[key]):4.2f} [{lo:4.2f}-{hi:4.2f}] "
    if design != "old":
        steps = lambda x: sum(x["steps"]) / len(x["steps"])
        cost = (sd(g["pair"]) / sd(old["pair"])) ** 2 * steps(g) / steps(old)
        line += f"{cost:5.2f}x"
    print(line)
