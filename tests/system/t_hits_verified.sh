#!/usr/bin/env bash
# A hit whose sampled re-run was compared (--verify, verify_rate) is a hit:
# stats' text, stats --json and the report's card and chart count it as one.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
echo in > in.txt
run_expect miss "new step" -- cp in.txt out.txt
run_expect hit "" -- cp in.txt out.txt
CACHET_VERIFY_RATE=1 run_expect hit "verified: same outputs" -- cp in.txt out.txt
CACHET_VERIFY_RATE=1 run_expect hit "verified: same outputs" -- cp in.txt out.txt

cachet stats --json > stats.json
python3 - <<'PY' || fail "stats --json does not count verified hits as hits: $(cat stats.json)"
import json
o = json.load(open("stats.json"))
assert o["hits"] == 3 and o["verified"] == 2 and o["misses"] == 1, o
PY
cachet stats > stats.txt
grep -Eq '^hits +3 +\(75\.0%\)' stats.txt || fail "stats text does not say 3 hits: $(cat stats.txt)"

cachet report -o report.html || fail "cachet report exited $?"
python3 - <<'PY' || fail "the report does not count verified hits as hits"
import re
page = open("report.html", encoding="utf-8").read()
card = re.search(r'id="hits"[^>]*>\s*(\d+)', page)
assert card and card.group(1) == "3", card and card.group(0)
rate = re.search(r'id="hit-rate"[^>]*>\s*([\d.]+%)', page)
assert rate and rate.group(1) == "75.0%", rate and rate.group(0)
bars = [int(n) for n in re.findall(r'<title>[^<]*?: (\d+) hits,', page)]
assert sum(bars) == 3, bars
PY
