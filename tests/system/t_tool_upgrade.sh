# A tool upgrade is seen even when the new tool has the same path, the same
# size and the old mtime: the compiler itself, a compiler run by a driver, and
# a shared library the tool loads.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
mkdir bin lib tools

# "mycc": copies its input to its output behind a version banner.
cat > tools/mycc.c <<'EOF'
#include <stdio.h>
#ifndef VERSION
#error VERSION
#endif
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    FILE *in = fopen(argv[1], "r"), *out = fopen(argv[2], "w");
    if (!in || !out) return 1;
    fprintf(out, "mycc-%s:", VERSION);
    int c;
    while ((c = getc(in)) != EOF) putc(c, out);
    return fclose(out) != 0;
}
EOF
gcc -O1 -DVERSION='"1.0.1"' -o tools/mycc.v1 tools/mycc.c
gcc -O1 -DVERSION='"1.0.2"' -o tools/mycc.v2 tools/mycc.c

# "greet": a program whose behaviour comes from libgreet.so.
cat > tools/greet.c <<'EOF'
const char *greeting(void) { return GREETING; }
EOF
cat > tools/main.c <<'EOF'
#include <stdio.h>
const char *greeting(void);
int main(int argc, char **argv) {
    FILE *out = fopen(argv[1], "w");
    if (!out) return 1;
    fprintf(out, "%s\n", greeting());
    return fclose(out) != 0;
}
EOF
gcc -O1 -shared -fPIC -DGREETING='"hello-1"' -o tools/libgreet.so.v1 tools/greet.c
gcc -O1 -shared -fPIC -DGREETING='"hello-2"' -o tools/libgreet.so.v2 tools/greet.c
cp tools/libgreet.so.v1 lib/libgreet.so
gcc -O1 -o bin/greet tools/main.c -Llib -lgreet -Wl,-rpath,'$ORIGIN/../lib'

for pair in "mycc.v1 mycc.v2" "libgreet.so.v1 libgreet.so.v2"; do
    set -- $pair
    [ "$(stat -c %s "tools/$1")" = "$(stat -c %s "tools/$2")" ] ||
        fail "test setup: tools/$1 and tools/$2 differ in size"
    ! cmp -s "tools/$1" "tools/$2" || fail "test setup: tools/$1 and tools/$2 are identical"
done

# Replaces $2 in place by the content of $1, keeping $2's size and mtime.
upgrade() {
    cp -p "$2" "$T/saved"
    cp "$1" "$2"
    restore_mtime "$T/saved" "$2"
    [ "$(stat -c '%s %Y' "$2")" = "$(stat -c '%s %Y' "$T/saved")" ] ||
        fail "test setup: $2 changed size or mtime"
}

cp tools/mycc.v1 bin/mycc
echo "int x;" > in.c

section "the compiler as the step's command"
run_expect miss "new step" -- ./bin/mycc in.c direct.out
assert_content direct.out "mycc-1.0.1:int x;"
run_expect hit "" -- ./bin/mycc in.c direct.out
assert_content direct.out "mycc-1.0.1:int x;"

section "the compiler run by a driver script"
cat > driver.sh <<'EOF'
#!/bin/sh
set -e
"$(dirname "$0")/bin/mycc" "$1" "$2.tmp"
mv "$2.tmp" "$2"
EOF
chmod +x driver.sh
run_expect miss "new step" -- ./driver.sh in.c driven.out
assert_content driven.out "mycc-1.0.1:int x;"
run_expect hit "" -- ./driver.sh in.c driven.out

section "the compiler on PATH"
PATH="$W/bin:$PATH" run_expect miss "new step" -- mycc in.c path.out
assert_content path.out "mycc-1.0.1:int x;"
PATH="$W/bin:$PATH" run_expect hit "" -- mycc in.c path.out

section "upgrade the compiler (same path, size and mtime): every form misses"
upgrade tools/mycc.v2 bin/mycc
run_expect miss "" -- ./bin/mycc in.c direct.out
assert_content direct.out "mycc-1.0.2:int x;"
run_expect miss "inputs changed" -- ./driver.sh in.c driven.out
assert_content driven.out "mycc-1.0.2:int x;"
PATH="$W/bin:$PATH" run_expect miss "" -- mycc in.c path.out
assert_content path.out "mycc-1.0.2:int x;"
run_expect hit "" -- ./bin/mycc in.c direct.out
run_expect hit "" -- ./driver.sh in.c driven.out
assert_content driven.out "mycc-1.0.2:int x;"

section "downgrade back: the first results hit again"
upgrade tools/mycc.v1 bin/mycc
run_expect hit "" -- ./driver.sh in.c driven.out
assert_content driven.out "mycc-1.0.1:int x;"

section "a shared library the tool loads"
run_expect miss "new step" -- ./bin/greet greet.out
assert_content greet.out "hello-1"
run_expect hit "" -- ./bin/greet greet.out
assert_content greet.out "hello-1"
upgrade tools/libgreet.so.v2 lib/libgreet.so
run_expect miss "inputs changed" -- ./bin/greet greet.out
assert_content greet.out "hello-2"
run_expect hit "" -- ./bin/greet greet.out
assert_content greet.out "hello-2"

section "a library replaced by rename (new inode), same size and mtime"
cp -p lib/libgreet.so "$T/saved"
cp tools/libgreet.so.v1 lib/libgreet.so.new
restore_mtime "$T/saved" lib/libgreet.so.new
mv lib/libgreet.so.new lib/libgreet.so
run_expect hit "" -- ./bin/greet greet.out
assert_content greet.out "hello-1"

check_status_file_format
