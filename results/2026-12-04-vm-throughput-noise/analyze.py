# Pairs windows as an observer toggled on and off would: window k against the mean of its two
# neighbours, k odd. The spread of those ratios with nothing toggled is the noise a paired
# req/s measurement of the observer would have to beat.
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
r = [x["req_per_s"] for x in rows if x["phase"] == "measure"]
print(f"{len(r)} one-second windows: {min(r):.0f} to {max(r):.0f} req/s, sd {st.pstdev(r)/st.mean(r)*100:.1f} % of the mean")
for w in (1, 2, 3, 5):
    win = [sum(r[i:i + w]) / w for i in range(0, len(r) - w + 1, w)]
    d = [win[k] / ((win[k - 1] + win[k + 1]) / 2) - 1 for k in range(1, len(win) - 1, 2)]
    sd = st.pstdev(d)
    need = (sd / 0.003) ** 2
    print(f"windows of {w} s: {len(d)} pairs, median {st.median(d)*100:+.2f} %, sd {sd*100:.2f} %, "
          f"standard error {sd/len(d)**0.5*100:.2f} %; pairs for a 0.3 % standard error: {need:.0f} ({need*2*w/60:.0f} min per cell)")
