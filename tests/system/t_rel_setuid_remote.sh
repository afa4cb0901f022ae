# setuid and setgid bits never come from a remote: dropped by the remote hit
# and in the copy it stores locally, so the next, local, hit does not bring
# them back. A step run locally that makes a setuid file is the user's own:
# its local hit keeps the bits, as a plain run does.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

start_nginx web
export CACHET_REMOTE="http://127.0.0.1:$NGINX_PORT/cache"
W=$(workdir)
cd "$W"
make_tool='cp /bin/true tool && chmod 6755 tool'
# As root, the step also gives the tool away (first: chown clears the
# setuid bit): owners from a remote are not given either.
[ "$(id -u)" -ne 0 ] || make_tool='cp /bin/true tool && chown 1234:1234 tool && chmod 6755 tool'

section "the writer's own step keeps its bits, on its local hit too"
export CACHET_DIR=$T/writer
run_expect miss "new step" -- sh -c "$make_tool"
[ "$(stat -c %a tool)" = 6755 ] || fail "the step did not make a setuid file"
rm tool
run_expect hit "" -- sh -c "$make_tool"
[ "$(stat -c %a tool)" = 6755 ] || fail "the local hit lost the writer's own bits: $(stat -c %a tool)"
[ "$(id -u)" -ne 0 ] || [ "$(stat -c %u tool)" = 1234 ] || fail "the local hit lost the owner"
cachet remote flush -q

section "the reader's remote hit drops them"
export CACHET_DIR=$T/reader
rm tool
run_expect hit remote -- sh -c "$make_tool"
[ "$(stat -c %a tool)" = 755 ] || fail "the remote hit restored mode $(stat -c %a tool)"
[ "$(stat -c %u tool)" = "$(id -u)" ] || fail "the remote hit gave the tool to $(stat -c %u tool)"

section "and so does the reader's next, local, hit"
rm tool
run_expect hit "" -- sh -c "$make_tool"
[ "$(stat -c %a tool)" = 755 ] || fail "the local copy of the remote entry restored mode $(stat -c %a tool)"
[ "$(stat -c %u tool)" = "$(id -u)" ] || fail "the local copy gave the tool to $(stat -c %u tool)"
