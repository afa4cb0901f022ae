# Devices are ignored by type, not by the /dev prefix: a build in the tmpfs
# at /dev/shm records its inputs and outputs like one anywhere else (an
# edited source misses, a hit restores the object), while /dev/null,
# /dev/urandom and the absence of a device stay out of the key.
source "$(dirname "$0")/lib.sh"

command -v gcc >/dev/null || skip "gcc not installed"
[ -d /dev/shm ] && [ -w /dev/shm ] || skip "/dev/shm is not a writable directory"
[ "$(stat -c %d /dev/shm)" != "$(stat -c %d /dev)" ] || skip "/dev/shm is not a file system of its own"

S=$(mktemp -d /dev/shm/cachet-t_fs_devshm.XXXXXX)
trap 'rc=$?; rm -rf "$S" "/dev/shm/cachet-t_fs_devshm-ipc.$$"; (exit $rc); _lib_on_exit' EXIT
cd "$S"

section "a compile in /dev/shm"
printf 'int f(void) { return 1; }\n' > a.c
touch -d '-5 seconds' a.c .
run_expect miss "new step" -- gcc -c a.c -o a.o
cp a.o "$T/a1.o"
rm a.o
run_expect hit "" -- gcc -c a.c -o a.o
assert_same a.o "$T/a1.o"

section "an edited source in /dev/shm misses"
printf 'int f(void) { return 22; }\n' > a.c
touch -d '-5 seconds' a.c
run_expect miss "inputs changed" -- gcc -c a.c -o a.o
gcc -c a.c -o "$T/plain.o"
assert_same a.o "$T/plain.o"

section "devices stay out of the key"
dev=(sh -c 'echo x > /dev/null; head -c 8 /dev/urandom > /dev/null; cat /dev/null > dev.out; test -e /dev/cachet-no-such-device; echo $? >> dev.out')
run_expect miss "new step" -- "${dev[@]}"
run_expect hit "" -- "${dev[@]}"
assert_content dev.out 1

section "an IPC object at the top of /dev/shm is not an output"
ipc_obj=/dev/shm/cachet-t_fs_devshm-ipc.$$
ipc=(sh -c "echo 1 > $ipc_obj; echo built > ipc.out")
run_expect miss "new step" -- "${ipc[@]}"
rm -f "$ipc_obj" ipc.out
run_expect hit "" -- "${ipc[@]}"
assert_content ipc.out built
assert_absent "$ipc_obj"
