# The A/A's two designs side by side: the spread (sd) of the log ratio of A to B per pair,
# and what that costs in wall time for one standard error. With nothing different between A
# and B the true ratio is 1, so the sd is all noise: what a real comparison must beat.
import json, math, statistics as st, sys
d = sys.argv[1] if len(sys.argv) > 1 else "."
rows = [l.split() for l in open(f"{d}/per-rep.txt")]
a = [float(v) for arm, v in rows if arm == "A"]
b = [float(v) for arm, v in rows if arm == "B"]
per = [math.log(x / y) for x, y in zip(a, b)]
lines = [json.loads(l) for l in open(f"{d}/interleaved.jsonl")]
r = [x["req_per_s"] for x in lines if x["phase"] == "measure"]
# A A s B B s: pairs of 1-s windows, a settle line dropped after each switch.
inter = []
for i in range(0, len(r) - 5, 6):
    A = (r[i] + r[i + 1]) / 2
    B = (r[i + 3] + r[i + 4]) / 2
    inter.append(math.log(A / B))

def show(name, v, pair_s):
    sd = st.stdev(v)
    mean = st.mean(v)
    se = sd / math.sqrt(len(v))
    # Wall time for a standard error of 1 % of the ratio: (sd / 0.01)^2 pairs.
    need = (sd / 0.01) ** 2
    print(f"{name}: {len(v)} pairs, mean log ratio {mean:+.4f} ({math.exp(mean):.3f}x), "
          f"sd {sd:.4f}, standard error {se:.4f}; for a 1 % standard error "
          f"{need:.0f} pairs, {need * pair_s / 60:.0f} min at {pair_s:.1f} s a pair")
    return sd, pair_s
lag = st.correlation(r[:-1], r[1:]) if len(r) > 2 else float("nan")
print(f"interleaved: {len(r)} half-second lines, {min(r):.0f} to {max(r):.0f} req/s, "
      f"lag-1 autocorrelation {lag:.2f}")
# A per-rep pair is two loads of (0.5 s server start + 1 s warm-up + 4 s measured + exit);
# the interleaved pair is 3 s (1 s A, 0.5 s settle, 1 s B, 0.5 s settle).
total = float(sys.argv[2]) if len(sys.argv) > 2 else 2 * len(per) * 6.0
sp, tp = show("per-rep", per, total / len(per))
si, ti = show("interleaved", inter, 3.0)
print(f"interleaved / per-rep: sd {si / sp:.2f}x; wall time for the same standard error "
      f"{(si ** 2 * ti) / (sp ** 2 * tp):.2f}x")
