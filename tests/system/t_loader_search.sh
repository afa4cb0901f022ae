# The dynamic loader's library search is an input like any other. The audit
# library (src/preload/audit.c) tells the loader to skip the paths where no
# library is, without a stop; the lookups must still be recorded, so that a
# library put in an earlier directory of LD_LIBRARY_PATH (or in the cwd, which
# an empty entry names, as nvcc's children have it) makes the step run again
# and load it. Never the old output through the old library.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
mkdir -p first second bin
lib() { # DIR WORD: libgreet.so in DIR, whose greet() says WORD
    cat > greet.c <<EOF
const char *greet(void) { return "$2"; }
EOF
    gcc -O1 -shared -fPIC -o "$1/libgreet.so" greet.c
}
cat > main.c <<'EOF'
#include <stdio.h>
const char *greet(void);
int main(void) { puts(greet()); return 0; }
EOF
lib second "from second"
gcc -O1 -o bin/hello main.c -Lsecond -lgreet
readelf -d bin/hello | grep -q 'NEEDED.*libgreet' || fail "test setup: hello does not need libgreet"

# first (empty), an empty entry (the cwd), then second.
export LD_LIBRARY_PATH="$W/first::$W/second"

section "found in the last directory searched: miss, then hit"
run_expect miss "new step" -- sh -c 'bin/hello > out.txt'
assert_content out.txt "from second"
run_expect hit "" -- sh -c 'bin/hello > out.txt'
assert_content out.txt "from second"

section "a library appears in the first directory: miss, and it is the one loaded"
lib first "from first"
run_expect miss "inputs changed" -- sh -c 'bin/hello > out.txt'
assert_content out.txt "from first"
run_expect hit "" -- sh -c 'bin/hello > out.txt'
assert_content out.txt "from first"

section "and in the cwd, which the empty entry names"
rm first/libgreet.so
run_expect hit "" -- sh -c 'bin/hello > out.txt' # as in the first run
assert_content out.txt "from second"
lib . "from the cwd"
run_expect miss "inputs changed" -- sh -c 'bin/hello > out.txt'
assert_content out.txt "from the cwd"

section "a directory appears where the loader looked for its capability subdirectories"
rm libgreet.so
run_expect hit "" -- sh -c 'bin/hello > out.txt'
assert_content out.txt "from second"
mkdir -p first/glibc-hwcaps/x86-64-v2
lib first/glibc-hwcaps/x86-64-v2 "from a hwcaps directory"
run_expect miss "inputs changed" -- sh -c 'bin/hello > out.txt'
assert_content out.txt "from a hwcaps directory"

section "the program's answers are the same as without cachet"
want=$(bin/hello)
cachet run -- bin/hello > direct.txt
assert_content direct.txt "$want"
