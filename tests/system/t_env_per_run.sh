# Per-session and per-run identifiers (hyperfine's random offset, CI run
# ids, tmux panes) are keyed only where an output or stream holds the value.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
printf 'int f(void) { return 2; }\n' > c.c
COMPILE=(gcc -c c.c -o c.o)
run_expect miss "new step" -- "${COMPILE[@]}"
section "per-run identifiers: a compile hits, a step that writes one misses"
rm -f c.o
HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET=XXX GITHUB_RUN_ID=111 XDG_SESSION_ID=4 \
    step "${COMPILE[@]}"
expect hit ""
rm -f c.o
HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET=XXXXXXXXXXXXXXXXXXX GITHUB_RUN_ID=222 TMUX_PANE=%3 \
    WINDOWID=41943047 step "${COMPILE[@]}"
expect hit ""
STAMP=(sh -c 'echo "built by run $GITHUB_RUN_ID" > stamp.txt')
GITHUB_RUN_ID=1234567890 run_expect miss "new step" -- "${STAMP[@]}"
GITHUB_RUN_ID=1234567890 run_expect hit "" -- "${STAMP[@]}"
GITHUB_RUN_ID=1234567891 step "${STAMP[@]}"
expect miss "inputs changed"
assert_content stamp.txt "built by run 1234567891"
# A short value written as a line of its own.
LINE=(sh -c 'echo "$XDG_SESSION_ID"')
XDG_SESSION_ID=7 run_expect miss "" -- "${LINE[@]}" > out.txt
XDG_SESSION_ID=8 step "${LINE[@]}" > out.txt
expect miss "inputs changed"
assert_content out.txt 8
check_status_file_format
