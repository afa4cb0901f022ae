#!/usr/bin/env bash
# A new step's miss says what set it apart from the last step of the same
# identity (program and operands): argv, environment, cwd or compiler; and
# every -v line, status line and log line names the step.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
printf 'int f(void) { return 1; }\n' > a.c
mkdir sub
cp a.c sub/a.c

# detail of the last status line
last_detail() { status_field detail; }
last_step() { status_field step; }

section "the first run of a step: new step, nothing to compare with"
run_expect miss "new step" -- gcc -O2 -c a.c -o a.o
[ "$(last_step)" = "gcc -c a.c" ] || fail "step named '$(last_step)'"
[ -z "$(last_detail)" ] || fail "a detail with nothing to compare: $(last_detail)"

section "argv changed: named"
run_expect miss "new step" -- gcc -O3 -c a.c -o a.o
case "$(last_detail)" in *"-O2 → -O3"*) ;; *) fail "argv change not named: '$(last_detail)'" ;; esac

section "environment changed: named"
MY_SETTING=1 step gcc -O3 -c a.c -o a.o
expect miss "new step"
case "$(last_detail)" in *"MY_SETTING=1"*) ;; *) fail "variable not named: '$(last_detail)'" ;; esac

section "the compiler changed: named"
mkdir bin
cat > bin/gcc <<'SH'
#!/bin/sh
exec /usr/bin/gcc "$@"
SH
chmod +x bin/gcc
PATH="$W/bin:$PATH" step gcc -O3 -c a.c -o a.o
expect miss "new step"
case "$(last_detail)" in *"executable changed"*) ;; *) fail "compiler change not named: '$(last_detail)'" ;; esac

section "the log and -v say the same"
cachet log -n 1 | grep -qF "new step: executable changed" || fail "log: $(cachet log -n 1)"
PATH="$W/bin:$PATH" cachet run -v -- gcc -O3 -c a.c -o a.o 2> v.err
grep -qxF "cachet: hit gcc -c a.c" v.err || fail "-v hit line: $(cat v.err)"

section "cwd changed: named"
cd sub
run_expect miss "new step" -- gcc -O3 -c a.c -o a.o
case "$(last_detail)" in *"cwd: $W → $W/sub"*) ;; *) fail "cwd not named: '$(last_detail)'" ;; esac
cd ..

section "another program with other operands is no relative: plain new step"
run_expect miss "new step" -- gcc -O3 -c sub/a.c -o b.o
[ -z "$(last_detail)" ] || fail "compared with an unrelated step: $(last_detail)"
section "a step first run by a recache is named, and the next variant says what changed"
printf 'int g(void) { return 2; }\n' > c.c
CACHET_RECACHE=1 step gcc -O2 -c c.c -o c.o
expect miss recache
[ -z "$(last_detail)" ] || fail "a recache with a detail: $(last_detail)"
run_expect miss "new step" -- gcc -O1 -c c.c -o c.o
case "$(last_detail)" in *"-O2 → -O1"*) ;; *) fail "the step a recache ran is not named: '$(last_detail)'" ;; esac
check_status_file_format
