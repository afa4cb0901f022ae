# A Python code generator: the modules it imports are inputs by content,
# whatever their mtime says and wherever on sys.path they are found.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
mkdir first second
cat > gen.py <<'EOF'
import sys
import helper
with open(sys.argv[1], "w") as f:
    f.write(helper.render(sys.argv[2]) + "\n")
EOF
cat > second/helper.py <<'EOF'
def render(name):
    return "v1:" + name
EOF
export PYTHONPATH="$W/first:$W/second"
GEN=(python3 gen.py out.txt alpha)

section "a plain python run first leaves a bytecode cache next to helper.py"
"${GEN[@]}"
assert_content out.txt "v1:alpha"
ls second/__pycache__/helper.*.pyc > /dev/null || fail "python wrote no .pyc (is PYTHONDONTWRITEBYTECODE set?)"
rm out.txt

section "run, then run again: miss, hit"
run_expect miss "new step" -- "${GEN[@]}"
assert_content out.txt "v1:alpha"
run_expect hit "" -- "${GEN[@]}"
assert_content out.txt "v1:alpha"
rm out.txt
run_expect hit "" -- "${GEN[@]}"
assert_content out.txt "v1:alpha"

section "same-size edit of the helper with its mtime restored: miss, as plain"
cp -p second/helper.py helper.saved
sed -i 's/"v1:"/"v2:"/' second/helper.py
restore_mtime helper.saved second/helper.py
[ "$(stat -c '%s %Y' second/helper.py)" = "$(stat -c '%s %Y' helper.saved)" ] ||
    fail "test setup: size or mtime of the edited helper differs from the saved copy"
# Plain python trusts the stale .pyc here (mtime and size match) and never
# reads the new source. The step must still miss (the read of the .pyc keys
# the source's content, whatever its mtime), and then give what plain gives.
cp -a second second.before
"${GEN[@]}"
PLAIN_EDITED=$(cat out.txt)
diff -r second.before second > /dev/null || fail "test setup: the plain run changed the tree"
rm -rf second.before out.txt
run_expect miss "inputs changed" -- "${GEN[@]}"
assert_content out.txt "$PLAIN_EDITED"
run_expect hit "" -- "${GEN[@]}"
assert_content out.txt "$PLAIN_EDITED"

section "the bytecode cache refreshed from the new source: miss, new content"
touch second/helper.py
run_expect miss "inputs changed" -- "${GEN[@]}"
assert_content out.txt "v2:alpha"

section "a module of the same name earlier on sys.path: miss, new content"
cat > first/helper.py <<'EOF'
def render(name):
    return "first:" + name
EOF
run_expect miss "inputs changed" -- "${GEN[@]}"
assert_content out.txt "first:alpha"
run_expect hit "" -- "${GEN[@]}"
assert_content out.txt "first:alpha"

section "the shadowing module removed again: the older module's result"
rm first/helper.py
rm -rf first/__pycache__
# The earlier v2 run found a stale .pyc and rewrote it: what it read then is
# not what is there now, so this misses once, then hits.
echo stale > out.txt
run_expect miss "inputs changed" -- "${GEN[@]}"
assert_content out.txt "v2:alpha"
echo stale > out.txt
run_expect hit "" -- "${GEN[@]}"
assert_content out.txt "v2:alpha"

section "a helper next to gen.py comes first on sys.path: miss"
cat > helper.py <<'EOF'
def render(name):
    return "local:" + name
EOF
run_expect miss "inputs changed" -- "${GEN[@]}"
assert_content out.txt "local:alpha"

section "the argument is part of the step"
run_expect miss "new step" -- python3 gen.py out.txt beta
assert_content out.txt "local:beta"
run_expect hit "" -- "${GEN[@]}"
assert_content out.txt "local:alpha"

section "the step's environment is the caller's: no bytecode cache prefix"
python3 -c 'import sys; print(sys.pycache_prefix)' > "$T/plain_prefix.txt"
run_expect miss "new step" -- sh -c 'python3 -c "import sys; print(sys.pycache_prefix)" > "$0"' "$T/prefix.txt"
assert_same "$T/plain_prefix.txt" "$T/prefix.txt"

section "compileall writes the .pyc files where a plain run does; a hit restores them"
# What the test keeps for comparison stays out of the cwd, which python
# lists (its import system looks modules up in sys.path's '').
CMP=$(workdir cmp)
mkdir pkg
printf 'X = 1\n' > pkg/mod.py
printf 'Y = 2\n' > pkg/other.py
python3 -m compileall -q pkg
mkdir "$CMP/plain_pycache" && cp pkg/__pycache__/* "$CMP/plain_pycache/"
rm -rf pkg/__pycache__
run_expect miss "new step" -- python3 -m compileall -q pkg
[ "$(ls pkg/__pycache__)" = "$(ls "$CMP/plain_pycache")" ] || fail "other .pyc files than plain"
for f in "$CMP"/plain_pycache/*; do assert_same "$f" "pkg/__pycache__/$(basename "$f")"; done
rm -rf pkg/__pycache__
run_expect hit "" -- python3 -m compileall -q pkg
for f in "$CMP"/plain_pycache/*; do assert_same "$f" "pkg/__pycache__/$(basename "$f")"; done

check_status_file_format
