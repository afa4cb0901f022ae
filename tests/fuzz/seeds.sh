#!/usr/bin/env bash
# Writes the seed inputs of every fuzz target into $1/<target>/: valid
# encodings made by cachet's own encoders (fuzz_seeds), configuration and
# step-log lines, and small ELF objects and ar archives for the comparison.
#
#   seeds.sh OUTDIR FUZZ_SEEDS_BINARY
set -euo pipefail
out=$1
gen=$2
rm -rf "$out"
mkdir -p "$out"/{pathset,result,step,settings,compare,steplog,remote,memo}
"$gen" "$out"

cat > "$out/settings/1" <<'CONF'
# a cache shared by a team
max_size = 20G
max_age = 30d
compression_level = 19
verify_rate = 0.01
env_ignore = BUILD_ID, CI_*
umask = 002
read_only = yes
nondeterministic = rerun
remote = http://cache:8080/ read-only timeout=200, redis://r:6379
CONF
printf 'dir=/tmp/x\nverbose = on\nlog_size=1.5M\ncolor = never\n' > "$out/settings/2"
printf 'bogus line\n' > "$out/settings/3"

printf '1700000000000\thit\t\t12\t/w\tcc -c a.c\n1700000000001\tmiss\tinputs changed\t340\t/w/sub dir\tcc -c b.c -o '"'"'b c.o'"'"'\n' > "$out/steplog/1"
printf '1\tuncacheable\tnetwork connection\t5\t/\tcurl x\\tquoted\\nline\n17000' > "$out/steplog/2"

# The comparison takes one input split in two halves: A and B.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
printf 'int f(int x) { return x + 1; }\nint g;\nconst char s[] = "A";\n' > a.c
printf 'int f(int x) { return x + 2; }\nint h;\nconst char s[] = "B";\n' > b.c
cc -O1 -c a.c -o a.o
cc -O1 -c b.c -o b.o
ar rcD a.a a.o
ar rcD b.a b.o a.o
pair() { # pair A B NAME: A and B padded to one length, concatenated
    local n
    n=$(( $(stat -c %s "$1") > $(stat -c %s "$2") ? $(stat -c %s "$1") : $(stat -c %s "$2") ))
    { head -c "$n" < <(cat "$1" /dev/zero); head -c "$n" < <(cat "$2" /dev/zero); } > "$out/compare/$3"
}
pair a.o b.o elf
pair a.o a.o elf-same
pair a.a b.a ar
pair a.c b.c text
