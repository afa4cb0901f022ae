# The kernel-pipeline staleness case (DESIGN.md, failure 1): a generator
# named `repro` writes C for the runlist on its command line, gcc builds
# build/repro.elf, and the artifact's name does not depend on the runlist.
# Rebuilt with another runlist, the ELF must compute that runlist; going back
# and forth hits both steps.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
mkdir build
cat > repro <<'EOF'
#!/usr/bin/env python3
"""Generates build/kernel.c for the runlist given as argv[1], e.g. add_relu."""
import sys

OPS = {
    "add": "x = x + 3;",
    "relu": "x = x < 0 ? 0 : x;",
    "mul": "x = x * 2;",
}

runlist = sys.argv[1]
body = "\n".join("        " + OPS[op] for op in runlist.split("_"))
src = """#include <stdio.h>
int main(void) {
    static const int v[4] = {-5, -1, 2, 7};
    long s = 0;
    for (int i = 0; i < 4; i++) {
        int x = v[i];
%s
        s += x;
    }
    printf("%%s: %%ld\\n", "%s", s);
    return 0;
}
""" % (body, runlist)
with open("build/kernel.c", "w") as f:
    f.write(src)
EOF
chmod +x repro

build() {
    local runlist=$1 want_gen=$2 want_cc=$3
    run_expect "$want_gen" "" -- python3 repro "$runlist"
    run_expect "$want_cc" "" -- gcc -O1 -o build/repro.elf build/kernel.c
    [ -x build/repro.elf ] || fail "build/repro.elf is not executable"
}

section "runlist add_relu: both steps miss"
build add_relu miss miss
[ "$(./build/repro.elf)" = "add_relu: 17" ] || fail "add_relu computed '$(./build/repro.elf)'"

section "runlist add_add: the ELF of the same name now computes add_add"
build add_add miss miss
[ "$(./build/repro.elf)" = "add_add: 27" ] || fail "after add_add the ELF printed '$(./build/repro.elf)'"

section "back to add_relu: both steps hit, and the ELF computes add_relu"
build add_relu hit hit
[ "$(./build/repro.elf)" = "add_relu: 17" ] || fail "after add_relu (hit) the ELF printed '$(./build/repro.elf)'"

section "add_add again: both hit"
build add_add hit hit
[ "$(./build/repro.elf)" = "add_add: 27" ] || fail "after add_add (hit) the ELF printed '$(./build/repro.elf)'"

section "repeating a runlist with the artifacts in place hits"
build add_add hit hit
[ "$(./build/repro.elf)" = "add_add: 27" ] || fail "the ELF printed '$(./build/repro.elf)'"

section "an edit to the generator misses, and the ELF follows it"
sed -i 's/x = x + 3;/x = x + 4;/' repro
build add_add miss miss
[ "$(./build/repro.elf)" = "add_add: 35" ] || fail "after editing repro the ELF printed '$(./build/repro.elf)'"

section "a deleted build directory is restored by hits"
rm -rf build
mkdir build
build add_relu miss miss
[ "$(./build/repro.elf)" = "add_relu: 20" ] || fail "the ELF printed '$(./build/repro.elf)'"
rm -rf build
mkdir build
build add_add hit hit
[ "$(./build/repro.elf)" = "add_add: 35" ] || fail "the ELF printed '$(./build/repro.elf)'"

check_status_file_format
