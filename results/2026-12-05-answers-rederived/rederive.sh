#!/bin/bash
# Every stored comparison's answer before and after the interval rule (#46): the old answer
# from the report as stored at the commit given (default: the one before the rule), the new
# one from `rxsteer report` re-rendering the run in place. Run from the repository root after
# `cargo xtask build`; writes answers.md beside this file.
set -euo pipefail
BEFORE=${BEFORE:-5e84f1fb}
D="$(dirname "$0")"
answer() { # report.md on stdin -> "PROTO<TAB>verdict" lines
  python3 -c '
import re, sys
t = sys.stdin.read()
for m in re.finditer(r"\*\*Recommendation for ([^:]+): (.*?)\.\*\*", t):
    print(m.group(1) + "\t" + m.group(2))
for m in re.finditer(r"^- \*\*(HTTP/1\.1|ZAP): (.*?)\.\*\*", t, re.M):
    print(m.group(1) + "\t" + m.group(2))
'
}
{
  echo "# Every stored answer, before and after the interval rule"
  echo
  echo "Old: the report as stored at $BEFORE (a sign rule: every repetition higher, median at least"
  echo "1.05x). New: \`rxsteer report\` under the interval rule (docs/experiment.md). Made by"
  echo "\`rederive.sh\` beside this file."
  echo
  echo "| run | protocol | before | after | changed |"
  echo "|---|---|---|---|---|"
  for dir in $(find results -name run.json -printf '%h\n' | sort); do
    [ -f "$dir/report.md" ] || continue
    old=$(git show "$BEFORE:$dir/report.md" 2>/dev/null | answer || true)
    target/release/rxsteer report "$dir" >/dev/null
    new=$(answer < "$dir/report.md")
    while IFS=$'\t' read -r proto verdict; do
      [ -n "$proto" ] || continue
      was=$(printf '%s\n' "$old" | awk -F'\t' -v p="$proto" '$1 == p { print $2 }' | head -1)
      short_was=${was%%:*}; short_now=${verdict%%:*}
      changed=$([ "${short_was%% after*}" = "${short_now%% after*}" ] && echo "" || echo "**yes**")
      rel=${dir#results/}
      echo "| [$rel](../$rel/report.md) | $proto | ${was:-none} | $verdict | $changed |"
    done <<< "$new"
  done
} > "$D/answers.md"
echo "wrote $D/answers.md"
# The summary above the table: how many answers went from what to what.
python3 - "$D/answers.md" <<'PY'
import collections, re, sys
path = sys.argv[1]
text = open(path).read()
rows = [l for l in text.splitlines() if l.startswith("| [")]
moves = collections.Counter()
worse = 0
for l in rows:
    cells = [x.strip() for x in l.split("|")[1:-1]]
    before = cells[2].split(":")[0]
    after = re.sub(r" after \d+ repetitions| \(\d+\)", "", cells[3].split(":")[0])
    moves[(before, after)] += 1
    worse += cells[3].count(" worse, ")
lines = [f"{len(rows)} answers (run x protocol); {worse} arms inside them are now named worse.", ""]
lines += [f"- {n}: {b} -> {a}" for (b, a), n in moves.most_common()]
head, table = text.split("| run |", 1)
open(path, "w").write(head + "\n".join(lines) + "\n\n| run |" + table)
PY
