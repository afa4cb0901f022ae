# cachet report writes one self-contained HTML page that a real browser
# renders, whose numbers are those of `cachet stats --json`, and whose text
# from builds (commands with markup, quotes, non-UTF-8 bytes) stays text.
#
# Needs Debian's chromium (scripts/setup-debian.sh installs it); without it
# the test is skipped, it installs nothing.
source "$(dirname "$0")/lib.sh"

if ! command -v chromium > /dev/null 2>&1; then
    skip "chromium not installed"
fi

W=$(workdir)
cd "$W"

# Headless Chromium that touches nothing outside $T and asks the network for
# nothing; prints the rendered DOM (or writes a screenshot) of file $1.
browser() {
    local page=$1
    shift
    mkdir -p "$T/browser-home"
    HOME="$T/browser-home" timeout -k 10 90 chromium --headless --no-sandbox --disable-gpu \
        --disable-quic --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --disable-extensions \
        --user-data-dir="$(mktemp -d "$T/chromium.XXXXXX")" "$@" "file://$page" \
        2>> "$T/chromium.log"
}

section "steps with hits, misses of different reasons, uncacheable and failing ones"
echo one > in.txt
run_expect miss "new step" -- sh -c 'cat in.txt > out.txt'
run_expect hit "" -- sh -c 'cat in.txt > out.txt'
echo two > in.txt
run_expect miss "inputs changed" -- sh -c 'cat in.txt > out.txt'
run_expect hit "" -- sh -c 'cat in.txt > out.txt'
step false
expect_rc 1
expect miss
before=$(status_count)
printf 'piped\n' | cachet run -- cat > piped.out
[ "$(status_count)" -eq $((before + 1)) ] || fail "no status line for the stdin pipe step"
expect uncacheable
# The largest entry: 300 kB of output.
run_expect miss "new step" -- sh -c 'head -c 300000 /dev/zero > big.bin'
# A command whose text is markup, quotes and a byte that is not UTF-8.
WEIRD=$(printf '<i>&\x27"\xff')
run_expect miss "new step" -- sh -c 'echo "$1" > weird.txt' sh "$WEIRD"
# A step that differs between identical runs, found by --verify.
run_expect miss "new step" -- sh -c 'date +%s%N > stamp.txt'
cachet run --verify -- sh -c 'date +%s%N > stamp.txt' 2> /dev/null || true

section "the page is written and self-contained"
cachet report -o "$T/report.html" || fail "cachet report exited $?"
assert_exists "$T/report.html"
! ls "$T" | grep -q 'report.html.tmp' || fail "a temporary file of the report was left behind"
python3 - "$T/report.html" <<'EOF' || fail "the page is not self-contained"
import re, sys
page = open(sys.argv[1], "rb").read()
page.decode("utf-8")  # strict: every byte from builds was escaped
text = page.decode()
for pat in (r'\bsrc\s*=', r'<link\b', r'url\(', r'@import', r'https?://(?!www\.w3\.org/2000/svg)'):
    m = re.search(pat, text)
    assert not m, "external reference %r in the page" % m.group(0)
assert "<svg" in text, "no inline SVG"
EOF
cachet report > "$T/stdout.html" || fail "cachet report to stdout exited $?"
grep -q '</html>' "$T/stdout.html" || fail "cachet report wrote no page to stdout"

section "Chromium renders it; its numbers are those of cachet stats --json"
cachet stats --json > "$T/stats.json"
browser "$T/report.html" --dump-dom > "$T/dom.html" ||
    fail "chromium --dump-dom failed (see $T/chromium.log)"
python3 - "$T/dom.html" "$T/stats.json" <<'EOF' || fail "the rendered page does not match cachet stats --json"
import json, sys
from html.parser import HTMLParser

class Page(HTMLParser):
    """Text by element id and section, elements seen, the JSON block."""
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []          # (tag, id)
        self.by_id = {}
        self.tags = {}
        self.rect_classes = set()
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "rect":
            self.rect_classes.add(a.get("class"))
        if tag in ("br", "meta", "link", "img", "input", "hr", "wbr", "col", "area", "source"):
            return
        self.stack.append((tag, a.get("id")))
        if a.get("id"):
            self.by_id[a["id"]] = ""
    def handle_endtag(self, tag):
        # Chromium writes SVG elements with end tags, the page as "<rect/>":
        # an end tag only closes an element that is open.
        if tag not in [t for t, _ in self.stack]:
            return
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break
    def handle_data(self, data):
        for _, i in self.stack:
            if i:
                self.by_id[i] += data

p = Page()
p.feed(open(sys.argv[1], encoding="utf-8").read())
stats = json.load(open(sys.argv[2]))

for key in ("hits", "misses", "uncacheable", "errors", "entries"):
    shown = p.by_id.get(key)
    assert shown is not None, "no element with id %r" % key
    assert shown.strip() == str(stats[key]), "%s: page %r, stats %r" % (key, shown, stats[key])
assert p.by_id["time-saved-ms"].strip() == str(stats["time_saved_ms"]), "time saved differs"
assert p.by_id["bytes"].strip() == str(stats["bytes"]), "size on disk differs"
embedded = json.loads(p.by_id["cachet-stats"])
assert embedded == stats, "embedded JSON %r != stats %r" % (embedded, stats)
assert stats["hits"] >= 2 and stats["misses"] >= 5 and stats["uncacheable"] >= 1, stats
rate = "%.1f%%" % (100.0 * stats["hits"] / (stats["hits"] + stats["misses"]))
assert p.by_id["hit-rate"].strip() == rate, (p.by_id["hit-rate"], rate)

assert p.tags.get("svg", 0) >= 2, "expected the two charts, got %d <svg>" % p.tags.get("svg", 0)
assert {"hit", "miss", "uncacheable"} <= p.rect_classes, p.rect_classes

misses = p.by_id["miss-most"]
for want in ("cat in.txt > out.txt", "inputs changed", "new step", "uncacheable: reads stdin",
             "command failed"):
    assert want in misses, "'steps that miss most' lacks %r" % want
largest = p.by_id["largest"]
assert largest.index("head -c 300000") < largest.index("cat in.txt"), "largest entry not first"
assert "300.0 kB" in largest, "size of the largest entry not shown"
nondet = p.by_id["nondeterministic"]
assert "date +%s%N > stamp.txt" in nondet and "stamp.txt" in nondet, nondet
# Text from builds stays text: no <i> element, the byte shown as \xff.
assert "i" not in p.tags, "a command's '<i>' became an element"
assert "<i>&'\\''\"\\xff" in misses, "the command with markup is not shown as text"
EOF

section "a screenshot shows a page, not a blank"
browser "$T/report.html" --window-size=1280,2400 --screenshot="$T/report.png" > /dev/null ||
    fail "chromium --screenshot failed (see $T/chromium.log)"
python3 - "$T/report.png" <<'EOF' || fail "the screenshot is missing or blank"
import os, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
# A blank 1280x2400 page compresses to about 1 kB; charts and tables do not.
assert len(data) > 20000, "only %d bytes" % len(data)
EOF
