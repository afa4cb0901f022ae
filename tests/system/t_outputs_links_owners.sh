# What a hit leaves besides content and mode: hard links between outputs
# (cp a b; ln b c) come back as links; a file written in place through a
# name the step does not own as output (a hard link elsewhere) makes the
# step uncacheable; user.* extended attributes (cp -a) and owners (chown,
# tar x as root) come back as the plain run leaves them. Each case is run
# plainly, through cachet (a miss) and again (a hit), and the whole trees
# (tree_state: type, mode, link count, owner, xattrs, content) compared.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

section "hard links between outputs come back as links"
plain_and_cached 'echo data > a' sh -c 'cp a b && ln b c && ln c d'
[ "$(stat -c %h b)" = 3 ] && [ "$(stat -c %i b)" = "$(stat -c %i d)" ] || fail "b, c and d are not one file"

section "a file written in place through a hard link elsewhere: uncacheable, as plain"
setup='echo old > out && ln out keep'
find "$W" -mindepth 1 -delete
eval "$setup"
sh -c 'echo new > out'
PLAIN=$(tree_state "$W")
for i in 1 2; do
    find "$W" -mindepth 1 -delete
    eval "$setup"
    step sh -c 'echo new > out'
    expect_rc 0
    expect miss # run, not stored
    expect_reason_contains "hard link that is not its output"
    assert_same_tree "in-place write $i" "$PLAIN" "$(tree_state "$W")"
done
assert_content keep new

section "a hard link to an input: uncacheable"
find "$W" -mindepth 1 -delete
echo src > src
step ln src dst
expect miss
rm dst
step ln src dst
expect miss # never stored: a hit would make dst a file of its own
[ "$(stat -c %i src)" = "$(stat -c %i dst)" ] || fail "dst is not a link to src"

section "user.* extended attributes come back (cp -a)"
find "$W" -mindepth 1 -delete
if python3 -c 'import os, sys; open("probe", "w").close(); os.setxattr("probe", "user.probe", b"1")' 2>/dev/null; then
    rm probe
    # cp -a copies src's mtime onto dst, which keys src's mtime: the setup
    # gives it the same one each time, as a checkout that did not change.
    plain_and_cached 'echo x > src && python3 -c "import os; os.setxattr(\"src\", \"user.note\", b\"hello\\0bin\")" && touch -d @1700000000 src' \
        cp -a src dst
    [ "$(python3 -c 'import os; print(os.getxattr("dst", "user.note"))')" = "b'hello\x00bin'" ] ||
        fail "dst lost its attribute"
    plain_and_cached 'mkdir d' sh -c 'mkdir -p d/sub && python3 -c "import os; os.setxattr(\"d/sub\", \"user.dir\", b\"v\")"'
else
    rm -f probe
    echo "this file system has no user.* attributes: section skipped"
fi

section "owners: chown and tar x as root"
if [ "$(id -u)" -ne 0 ]; then
    echo "not root: owners cannot be set, section skipped"
    exit 0
fi
plain_and_cached '' sh -c 'echo x > f && chown 1234:5678 f && mkdir g && chown 4321 g'
[ "$(stat -c %u:%g f)" = 1234:5678 ] || fail "f lost its owner"
# A step that only changes an owner replays it.
plain_and_cached 'echo x > f' chown 2345:6789 f
# tar as root restores owners (and times) from the archive.
mkdir -p "$T/src"
echo content > "$T/src/file"
tar -C "$T/src" --owner=1111 --group=2222 -cf "$T/owned.tar" file
plain_and_cached '' tar xf "$T/owned.tar"
[ "$(stat -c %u:%g file)" = 1111:2222 ] || fail "tar's owner was not restored"
