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

section "same-size edit of the helper with its mtime restored: miss, new content"
cp -p second/helper.py helper.saved
sed -i 's/"v1:"/"v2:"/' second/helper.py
restore_mtime helper.saved second/helper.py
[ "$(stat -c '%s %Y' second/helper.py)" = "$(stat -c '%s %Y' helper.saved)" ] ||
    fail "test setup: size or mtime of the edited helper differs from the saved copy"
# Plain python trusts the stale .pyc here (mtime and size match), which is the
# trap: cachet must still see the new source.
run_expect miss "inputs changed" -- "${GEN[@]}"
assert_content out.txt "v2:alpha"
run_expect hit "" -- "${GEN[@]}"
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

section "the shadowing module removed again: the older result hits"
rm first/helper.py
rm -rf first/__pycache__
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

check_status_file_format
