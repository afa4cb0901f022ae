# stdin that is /dev/null reads the same every time: a step that reads it
# (`cc -E - </dev/null`, cargo's `rustc -` probe, configure tests) is cached,
# with the fact "stdin is /dev/null" keyed, so that it does not hit when
# stdin is a pipe (uncacheable: a stream) or a file with content (a miss:
# a regular file is keyed by content). A step that never reads stdin keys
# nothing of it, whatever stdin is.
source "$(dirname "$0")/lib.sh"
command -v gcc > /dev/null || skip "gcc not installed"

W=$(workdir)
cd "$W"

section "cc -E - < /dev/null: plain, miss, hit"
set +e
gcc -E -P -dM -x c - < /dev/null > plain.out
set -e
run_expect miss "new step" -- gcc -E -P -dM -x c - < /dev/null > got.out
assert_same plain.out got.out
rm got.out
run_expect hit "" -- gcc -E -P -dM -x c - < /dev/null > got.out
assert_same plain.out got.out

section "the same step with stdin a pipe: uncacheable, never the /dev/null entry"
echo '#define FROM_THE_PIPE 1' | gcc -E -P -dM -x c - > plain-pipe.out
set +e
echo '#define FROM_THE_PIPE 1' | cachet run -- gcc -E -P -dM -x c - > got-pipe.out
set -e
expect uncacheable "reads stdin stream"
assert_same plain-pipe.out got-pipe.out

section "the same step with stdin a file with content: a miss, then a hit"
echo '#define FROM_THE_FILE 1' > in.h
gcc -E -P -dM -x c - < in.h > plain-file.out
run_expect miss "new step" -- gcc -E -P -dM -x c - < in.h > got-file.out
assert_same plain-file.out got-file.out
run_expect hit "" -- gcc -E -P -dM -x c - < in.h > got-file.out
assert_same plain-file.out got-file.out

section "an empty file on stdin is a file: keyed by its (empty) content"
: > empty.h
run_expect miss "" -- gcc -E -P -dM -x c - < empty.h > got-empty.out
assert_same plain.out got-empty.out
run_expect hit "" -- gcc -E -P -dM -x c - < empty.h > got-empty.out

section "/dev/stdin opened by name while stdin is /dev/null: keyed the same way"
run_expect miss "new step" -- sh -c 'cat /dev/stdin; echo done' < /dev/null > dn.out
run_expect hit "" -- sh -c 'cat /dev/stdin; echo done' < /dev/null > dn.out
assert_content dn.out done
set +e
echo 'piped' | cachet run -- sh -c 'cat /dev/stdin; echo done' > dn-pipe.out
set -e
[ "$(last_result)" != hit ] || fail "a run that read /dev/null hit for a pipe"
assert_content dn-pipe.out "piped
done"

section "a step that never reads stdin hits whatever stdin is"
run_expect miss "new step" -- sh -c 'echo quiet > q.txt' < /dev/null
echo 'unread' | { step sh -c 'echo quiet > q.txt'; }
expect hit
