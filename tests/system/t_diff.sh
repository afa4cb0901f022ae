# cachet diff: exit statuses, the ELF report in text and JSON (a kernel
# compiler's back end that folded different entry functions on each compile),
# archives, text, binary and directory trees, and usage errors.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# diff_rc ARGS...: runs cachet diff with stdout in $T/diff.out and stderr in
# $T/diff.err; sets RC.
diff_rc() {
    set +e
    cachet diff "$@" > "$T/diff.out" 2> "$T/diff.err"
    RC=$?
    set -e
    [ "$RC" -ne 124 ] || fail "cachet diff $* timed out"
}

expect_diff_rc() {
    local want=$1
    shift
    diff_rc "$@"
    [ "$RC" -eq "$want" ] ||
        fail "cachet diff $* exited $RC, expected $want; stdout: $(head -5 "$T/diff.out"); stderr: $(cat "$T/diff.err")"
}

out_has() {
    grep -qF -- "$1" "$T/diff.out" || fail "cachet diff output lacks '$1':
$(head -20 "$T/diff.out")"
}

# kernel NAME INLINED...: an object with entry functions main_kernel_simt_1..4,
# those named made static inline (so they vanish from the symbol table). Each
# is compiled in its own directory under the same source name, as a build
# would, so that nothing but the code differs.
kernel() {
    local name=$1
    shift
    mkdir -p "$name"
    {
        for i in 1 2 3 4; do
            local storage=""
            for j in "$@"; do
                [ "$j" = "$i" ] && storage="static inline "
            done
            echo "${storage}int main_kernel_simt_$i(int x) { return x * $i + 7; }"
        done
        echo "int launch(int x) { return main_kernel_simt_1(x) + main_kernel_simt_2(x) + main_kernel_simt_3(x) + main_kernel_simt_4(x); }"
    } > "$name/kernel.c"
    (cd "$name" && gcc -O2 -c kernel.c -o kernel.o)
}

section "identical objects: exit 0, 'identical'"
kernel full
kernel full2
expect_diff_rc 0 full/kernel.o full2/kernel.o
[ "$(cat "$T/diff.out")" = "identical" ] || fail "expected 'identical', got: $(cat "$T/diff.out")"
[ ! -s "$T/diff.err" ] || fail "stderr not empty: $(cat "$T/diff.err")"

section "entry functions folded away: exit 1, the summary names them first"
kernel folded 1 3
expect_diff_rc 1 full/kernel.o folded/kernel.o
first=$(head -1 "$T/diff.out")
case "$first" in
    "2 symbols missing in B: main_kernel_simt_1, main_kernel_simt_3"*) ;;
    *) fail "summary line: '$first'" ;;
esac
out_has "symbol main_kernel_simt_1 missing in B: GLOBAL FUNC in .text"
out_has "section .text differs:"
out_has "first difference at offset 0x"
if grep -q "main_kernel_simt_2 missing\|main_kernel_simt_4 missing" "$T/diff.out"; then
    fail "symbols present in both reported missing: $(cat "$T/diff.out")"
fi
expect_diff_rc 1 folded/kernel.o full/kernel.o
out_has "2 symbols only in B: main_kernel_simt_1, main_kernel_simt_3"

section "--json: the missing symbol with section and binding"
expect_diff_rc 1 --json full/kernel.o folded/kernel.o
python3 - "$T/diff.out" <<'EOF' || fail "cachet diff --json: $(cat "$T/diff.out")"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["differ"] is True, o
assert o["summary"].startswith("2 symbols missing in B: main_kernel_simt_1"), o["summary"]
assert o["counts"]["symbol_missing_in_b"] == 2, o["counts"]
items = [d for e in o["entries"] for d in e["differences"]]
missing = {d["name"]: d for d in items if d["kind"] == "symbol_missing_in_b"}
assert set(missing) == {"main_kernel_simt_1", "main_kernel_simt_3"}, missing
m = missing["main_kernel_simt_1"]
assert m["section"] == ".text" and m["binding"] == "GLOBAL" and m["type"] == "FUNC", m
text = [d for d in items if d["kind"] == "section_differs" and d["name"] == ".text"]
assert text and isinstance(text[0]["offset"], int), items
EOF
expect_diff_rc 0 --json full/kernel.o full2/kernel.o
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["differ"] is False and o["entries"] == [], o' "$T/diff.out" ||
    fail "identical --json: $(cat "$T/diff.out")"

section "static archives differing in one member"
mkdir -p libA libB
for d in libA libB; do
    echo 'int helper_one(void) { return 1; }' > "$d/one.c"
    echo 'int helper_three(void) { return 3; }' > "$d/three.c"
done
cp full/kernel.c libA/kernel.c
cp folded/kernel.c libB/kernel.c
for d in libA libB; do
    (cd "$d" && gcc -O2 -c one.c kernel.c three.c && ar rcs libk.a one.o kernel.o three.o)
done
expect_diff_rc 1 libA/libk.a libB/libk.a
out_has "member kernel.o: 2 symbols missing in B: main_kernel_simt_1, main_kernel_simt_3"
out_has "    symbol main_kernel_simt_1 missing in B"
if grep -q "one.o\|three.o" "$T/diff.out"; then
    fail "unchanged members reported: $(cat "$T/diff.out")"
fi

section "text: a bounded unified diff"
seq 1 100 > a.txt
seq 1 100 | sed 's/^50$/fifty/' > b.txt
expect_diff_rc 1 a.txt b.txt
out_has "--- a.txt"
out_has "+++ b.txt"
out_has "@@ -47,7 +47,7 @@"
out_has "-50"
out_has "+fifty"
seq 1 1000 > long_a.txt
seq 1 1000 | sed 's/0$/zero/' > long_b.txt
expect_diff_rc 1 --max-lines 12 long_a.txt long_b.txt
[ "$(wc -l < "$T/diff.out")" -eq 14 ] || fail "--max-lines 12: $(wc -l < "$T/diff.out") lines: $(cat "$T/diff.out")"
out_has "more lines"

section "binary: sizes and the first differing offset"
head -c 3000 /dev/zero | tr '\0' '\377' > a.bin
cp a.bin b.bin
printf '\001' | dd of=b.bin bs=1 seek=2049 conv=notrunc status=none
expect_diff_rc 1 a.bin b.bin
out_has "first difference at offset 2049"
head -c 100 a.bin > short.bin
expect_diff_rc 1 a.bin short.bin
out_has "3000 bytes in A, 100 in B"

section "garbage after an ELF header: reported, not a crash"
head -c 64 full/kernel.o > junk.o
head -c 2000 /dev/urandom >> junk.o
expect_diff_rc 1 full/kernel.o junk.o
out_has "B is not a readable ELF file"

section "directories: only in one, type, symlinks, and per-file comparison"
mkdir -p treeA/obj treeB/obj treeA/gone treeB/kind
cp full/kernel.o treeA/obj/kernel.o
cp folded/kernel.o treeB/obj/kernel.o
cp a.txt treeA/notes.txt
cp a.txt treeB/notes.txt
touch treeA/kind treeB/new
ln -s kernel.o treeA/obj/current
ln -s other.o treeB/obj/current
expect_diff_rc 1 treeA treeB
out_has "only in A: gone (directory)"
out_has "only in B: new (regular file)"
out_has "kind: regular file in A, directory in B"
out_has "obj/current: symlink to kernel.o in A, to other.o in B"
out_has "obj/kernel.o: 2 symbols missing in B: main_kernel_simt_1, main_kernel_simt_3"
if grep -q "notes.txt" "$T/diff.out"; then
    fail "identical file reported: $(cat "$T/diff.out")"
fi
cp -a treeA treeA2
expect_diff_rc 0 treeA treeA2

section "what the bytes say: FILE symbols, strings, .comment, build-id, __DATE__, -g directories"
mkdir -p nv1 nv2
printf 'static int s(void) { return 2; }\nint f(void) { return s(); }\n' > nv1/tmpxft_0000660b.c
cp nv1/tmpxft_0000660b.c nv2/tmpxft_000068c7.c
(cd nv1 && gcc -O2 -c tmpxft_0000660b.c -o k.o)
(cd nv2 && gcc -O2 -c tmpxft_000068c7.c -o k.o)
expect_diff_rc 1 nv1/k.o nv2/k.o
out_has "FILE symbol tmpxft_0000660b.c in A, tmpxft_000068c7.c in B"
out_has 'strings only in A: "tmpxft_0000660b.c"; only in B: "tmpxft_000068c7.c"'
objcopy --remove-section .comment nv1/k.o nocomment.o
printf 'GCC: (Custom 99.0)\0' > comment.bin
objcopy --add-section .comment=comment.bin nocomment.o custom.o
expect_diff_rc 1 nv1/k.o custom.o
out_has 'only in B: "GCC: (Custom 99.0)"'
out_has 'strings only in A: "GCC: ('
printf 'int main(void) { return 0; }\n' > m.c
gcc -o m1 m.c -Wl,--build-id=sha1
gcc -o m2 m.c -Wl,--build-id=md5
expect_diff_rc 1 m1 m2
out_has "build-id $(readelf -n m1 | sed -n 's/.*Build ID: //p') in A, $(readelf -n m2 | sed -n 's/.*Build ID: //p') in B"
printf 'const char *built = "Nov 14 2023";\n' > d1.c
printf 'const char *built = "Mar  9 2024";\n' > d2.c
mkdir -p date1 date2
cp d1.c date1/d.c
cp d2.c date2/d.c
(cd date1 && gcc -O0 -c d.c -o d.o)
(cd date2 && gcc -O0 -c d.c -o d.o)
expect_diff_rc 1 date1/d.o date2/d.o
out_has '"Nov 14 2023" in A, "Mar  9 2024" in B'
mkdir -p g1 g2
cp d1.c g1/d.c
cp d1.c g2/d.c
(cd g1 && gcc -g -c d.c -o d.o)
(cd g2 && gcc -g -c d.c -o d.o)
expect_diff_rc 1 g1/d.o g2/d.o
out_has "strings only in A: \"$W/g1\"; only in B: \"$W/g2\""
out_has "compile unit 1 (d.c): DW_AT_comp_dir $W/g1 in A, $W/g2 in B"
# Neither cachet nor, where cachet is static, its dynamic twin (which diff
# runs in) links the libraries of the plugins.
for bin in "$CACHET_BIN" "$(dirname "$CACHET_BIN")/cachet-dynamic"; do
    [ -e "$bin" ] || continue
    ! ldd "$bin" | grep -q libdw || fail "$bin itself links libdw"
done

section "ar member dates and the symbol index"
mkdir -p arU
cp nv1/k.o arU/k.o
touch -d '2023-11-14 00:00:00 UTC' arU/k.o
(cd arU && ar rcU ../dated1.a k.o)
touch -d '2024-03-09 00:00:00 UTC' arU/k.o
(cd arU && ar rcU ../dated2.a k.o)
expect_diff_rc 1 dated1.a dated2.a
out_has "member k.o header differs: date 2023-11-14 00:00:00 UTC (1699920000) in A, 2024-03-09 00:00:00 UTC (1709942400) in B"

section "tarballs, gzip and zip member by member, through the plugin only"
for bin in "$CACHET_BIN" "$(dirname "$CACHET_BIN")/cachet-dynamic"; do
    [ -e "$bin" ] || continue
    ! ldd "$bin" | grep -q libarchive || fail "$bin itself links libarchive"
done
mkdir -p tz1 tz2
echo hello > tz1/f.txt
echo hellO > tz2/f.txt
cp nv1/k.o tz1/k.o
cp nv2/k.o tz2/k.o
touch -d '2023-11-14 00:00:00 UTC' tz1/f.txt tz2/f.txt tz1/k.o tz2/k.o
tar -C tz1 -czf tz1.tgz f.txt k.o
tar -C tz2 -czf tz2.tgz f.txt k.o
expect_diff_rc 1 tz1.tgz tz2.tgz
out_has "2 members differ: f.txt, k.o"
out_has "-hello"
out_has "+hellO"
out_has "FILE symbol tmpxft_0000660b.c in A, tmpxft_000068c7.c in B"
cp tz1/f.txt g1.txt
cp tz1/f.txt g2.txt
touch -d '2023-11-14 00:00:00 UTC' g1.txt
touch -d '2024-03-09 00:00:00 UTC' g2.txt
gzip -c g1.txt > g.1.gz
gzip -c g2.txt > g.2.gz
expect_diff_rc 1 g.1.gz g.2.gz
out_has "mtime 2023-11-14 00:00:00 UTC (1699920000) in A, 2024-03-09 00:00:00 UTC (1709942400) in B"
tar -C tz1 --mtime='2023-11-14 00:00:00 UTC' -cf t1.tar f.txt
tar -C tz1 --mtime='2024-03-09 00:00:00 UTC' --mode=0755 -cf t2.tar f.txt
expect_diff_rc 1 t1.tar t2.tar
out_has "member f.txt header differs: mode 0644 in A, 0755 in B, mtime 2023-11-14"
python3 - <<'PY'
import zipfile
for name, text in (("z1.zip", "hello\n"), ("z2.zip", "world\n")):
    with zipfile.ZipFile(name, "w") as z:
        z.writestr(zipfile.ZipInfo("a.txt", (2023, 11, 14, 0, 0, 0)), text)
PY
expect_diff_rc 1 z1.zip z2.zip
out_has "+world"

section ".pyc headers and modes in trees"
if command -v python3 > /dev/null; then
    mkdir -p py1 py2
    echo 'x = 1' > py1/m.py
    touch -d '2023-11-14 00:00:00 UTC' py1/m.py
    python3 -c 'import py_compile; py_compile.compile("py1/m.py", "py1/m.pyc", "m.py")'
    touch -d '2024-03-09 00:00:00 UTC' py1/m.py
    python3 -c 'import py_compile; py_compile.compile("py1/m.py", "py2/m.pyc", "m.py")'
    expect_diff_rc 1 py1/m.pyc py2/m.pyc
    out_has "pyc source mtime 2023-11-14 00:00:00 UTC (1699920000) in A, 2024-03-09 00:00:00 UTC (1709942400) in B; the code is identical"
fi
mkdir -p modeA modeB
echo same > modeA/run.sh
echo same > modeB/run.sh
chmod 644 modeA/run.sh
chmod 755 modeB/run.sh
expect_diff_rc 1 modeA modeB
out_has "run.sh: mode 0644 in A, 0755 in B"

section "usage errors and unreadable input: exit 2, one line on stderr"
for args in "" "full/kernel.o" "a b c" "--bogus a.txt b.txt" "--max-lines 0 a.txt b.txt" \
    "--max-lines" "full/kernel.o no-such-file" "no-such-dir treeA"; do
    # shellcheck disable=SC2086
    expect_diff_rc 2 $args
    [ "$(wc -l < "$T/diff.err")" -eq 1 ] || fail "cachet diff $args: stderr: $(cat "$T/diff.err")"
    [ ! -s "$T/diff.out" ] || fail "cachet diff $args printed a report: $(cat "$T/diff.out")"
done
grep -q "no-such-dir" "$T/diff.err" || fail "the message does not name the path: $(cat "$T/diff.err")"

section "help"
cachet help diff | grep -q "usage: cachet diff" || fail "cachet help diff"
cachet --help | grep -q "  diff " || fail "diff missing from the general help"
