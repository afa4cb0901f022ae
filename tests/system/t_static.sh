# A statically linked program (no dynamic loader, no preload possible): its
# reads are still observed, so an edited input misses.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
cat > upcase.c <<'EOF'
#include <ctype.h>
#include <stdio.h>
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    FILE *in = fopen(argv[1], "r");
    if (!in) return 1;
    FILE *out = fopen(argv[2], "w");
    if (!out) return 1;
    int c;
    while ((c = getc(in)) != EOF) putc(toupper(c), out);
    return fclose(out) != 0;
}
EOF
gcc -O1 -static -o upcase upcase.c
file_out=$(od -An -c -N4 upcase | tr -d ' ')
[ "$file_out" = '177ELF' ] || fail "test setup: upcase is not an ELF file"
! readelf -l upcase | grep -q 'INTERP' || fail "test setup: upcase is not static (has PT_INTERP)"

echo "hello static" > in.txt

section "miss, then hit"
run_expect miss "new step" -- ./upcase in.txt out.txt
assert_content out.txt "HELLO STATIC"
run_expect hit "" -- ./upcase in.txt out.txt
assert_content out.txt "HELLO STATIC"
rm out.txt
run_expect hit "" -- ./upcase in.txt out.txt
assert_content out.txt "HELLO STATIC"

section "edited input: miss"
echo "second edit" > in.txt
run_expect miss "inputs changed" -- ./upcase in.txt out.txt
assert_content out.txt "SECOND EDIT"

section "unchanged: hit"
run_expect hit "" -- ./upcase in.txt out.txt
assert_content out.txt "SECOND EDIT"

section "same-size edit with the mtime restored: miss"
cp -p in.txt "$T/saved"
echo "second edjt" > in.txt
restore_mtime "$T/saved" in.txt
run_expect miss "inputs changed" -- ./upcase in.txt out.txt
assert_content out.txt "SECOND EDJT"

section "an input given through a symlink follows its target"
echo "target one" > t1.txt
echo "target two" > t2.txt
ln -s t1.txt link.txt
run_expect miss "new step" -- ./upcase link.txt out2.txt
assert_content out2.txt "TARGET ONE"
run_expect hit "" -- ./upcase link.txt out2.txt
ln -sfn t2.txt link.txt
run_expect miss "inputs changed" -- ./upcase link.txt out2.txt
assert_content out2.txt "TARGET TWO"

section "a child that changes directory reads relative to its own cwd"
mkdir -p data
echo "in data" > data/in.txt
S=(sh -c 'cd data && ../upcase in.txt ../out3.txt')
run_expect miss "new step" -- "${S[@]}"
assert_content out3.txt "IN DATA"
run_expect hit "" -- "${S[@]}"
# A file of the same name in the step's starting directory is not the input.
echo "decoy" > in.txt
run_expect hit "" -- "${S[@]}"
assert_content out3.txt "IN DATA"
echo "in datb" > data/in.txt
run_expect miss "inputs changed" -- "${S[@]}"
assert_content out3.txt "IN DATB"

check_status_file_format
