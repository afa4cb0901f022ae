# Outputs written through `..` after a chdir: the step names one file by
# two spellings (`cd src && gcc -o ../a.o`: the driver looks the output up
# by the absolute path it computes itself, the assembler writes
# "src/../a.o"). Both are the same output, not an input that the run
# changed: such steps are stored, hit, and restore where plain writes.
source "$(dirname "$0")/lib.sh"

command -v gcc > /dev/null || skip "gcc not installed"
command -v make > /dev/null || skip "make not installed"

W=$(workdir)
cd "$W"

section "cd src && gcc -c a.c -o ../a.o: stored, hit, same tree as plain"
plain_and_cached 'mkdir src && printf "int a(void) { return 1; }\n" > src/a.c' \
    sh -c 'cd src && gcc -c a.c -o ../a.o'
assert_exists a.o
# An edit misses; undone, it hits again.
printf 'int a(void) { return 2; }\n' > src/a.c
run_expect miss "inputs changed" -- sh -c 'cd src && gcc -c a.c -o ../a.o'
printf 'int a(void) { return 1; }\n' > src/a.c
run_expect hit "" -- sh -c 'cd src && gcc -c a.c -o ../a.o'

section "make -C sub writing ../b.o and ../gen.h"
SETUP='mkdir sub && printf "int b(void) { return 2; }\n" > b.c && echo one > sub/in.txt
printf "all: ../b.o ../gen.h\n../b.o: ../b.c\n\tgcc -c ../b.c -o ../b.o\n../gen.h: in.txt\n\tcp in.txt ../gen.h\n" > sub/Makefile'
plain_and_cached "$SETUP" make -s -C sub
assert_content gen.h one

section "through a symlinked directory: .. is where the link led"
plain_and_cached 'mkdir -p d1/sub && ln -s d1/sub link && printf "int c(void) { return 3; }\n" > d1/sub/c.c' \
    sh -c 'cd link && gcc -c c.c -o ../c.o'
assert_exists d1/c.o
assert_absent c.o

check_status_file_format
