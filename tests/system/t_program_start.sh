# Programs must start under cachet and behave as without it: the tracer's
# LD_PRELOAD and LD_AUDIT libraries change how the loader starts every
# dynamically linked program (static TLS sized before the libraries are
# loaded, each library candidate offered to the audit library first). For
# each toolchain program installed here: a --version-like run and a tiny
# real job, plainly and through cachet twice (miss, then hit or uncached),
# with the same exit status, stdout and stderr each time. Programs not
# installed are listed as skipped; the test skips only when none is.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
ran=0

# same NAME -- CMD...: CMD plainly, then through cachet twice, in a fresh
# directory each time (made by `setup`, when defined); the streams and exit
# status must match the plain run's.
same() {
    local name=$1 i
    shift 2
    for i in plain miss again; do
        rm -rf "$W/run-$i" && mkdir "$W/run-$i"
        (cd "$W/run-$i" && { [ "$(type -t setup)" != function ] || setup; })
    done
    set +e
    (cd "$W/run-plain" && "$@") > "$W/plain.out" 2> "$W/plain.err"
    local want=$?
    set -e
    for i in miss again; do
        set +e
        (cd "$W/run-$i" && cachet run -- "$@") > "$W/$i.out" 2> "$W/$i.err"
        RC=$?
        set -e
        [ "$RC" -eq "$want" ] || { cat "$W/$i.err" >&2; fail "$name: $* exited $RC under cachet ($i), $want without"; }
        cmp -s "$W/plain.out" "$W/$i.out" || { diff "$W/plain.out" "$W/$i.out" >&2 || true; fail "$name: $*: stdout differs under cachet ($i)"; }
        cmp -s "$W/plain.err" "$W/$i.err" || { diff "$W/plain.err" "$W/$i.err" >&2 || true; fail "$name: $*: stderr differs under cachet ($i)"; }
    done
    ran=$((ran + 1))
}

# have PROGRAM: on PATH, or a visible "skipped" line.
have() {
    if command -v "$1" > /dev/null 2>&1; then
        return 0
    fi
    echo "skipped: $1 (not installed)"
    return 1
}

c_main() { printf '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n' > hello.c; }

if have rustc; then
    section rustc
    same rustc -- rustc --version
    setup() { printf 'fn main() { println!("{}", 6 * 7); }\n' > hello.rs; }
    same rustc -- sh -c 'rustc -O hello.rs -o hello && ./hello'
    unset -f setup
fi
if have rustdoc; then
    section rustdoc
    same rustdoc -- rustdoc --version
    setup() { printf '//! A crate.\n/// Adds.\npub fn add(a: u32, b: u32) -> u32 { a + b }\n' > lib.rs; }
    same rustdoc -- sh -c 'rustdoc --crate-name adder lib.rs -o doc && ls doc/adder'
    unset -f setup
fi
if have cargo; then
    section cargo
    same cargo -- cargo --version
    setup() {
        mkdir -p src
        printf '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n' > Cargo.toml
        printf 'fn main() { println!("tiny"); }\n' > src/main.rs
    }
    same cargo -- sh -c 'cargo build -q --offline && ./target/debug/tiny'
    unset -f setup
fi
if have java; then
    section java
    same java -- java -version
    setup() { printf 'class Hello { public static void main(String[] a) { System.out.println("hello " + a.length); } }\n' > Hello.java; }
    same java -- java Hello.java x y
    unset -f setup
fi
if have node; then
    section node
    same node -- node --version
    same node -- node -e 'console.log([3, 1, 2].sort().join(","))'
fi
if have python3; then
    section python3
    same python3 -- python3 --version
    same python3 -- python3 -c 'import json, sys; print(json.dumps({"v": sys.version_info[0]}))'
fi
if [ -x /root/.pyenv/shims/python3 ]; then
    section "pyenv shim"
    same pyenv -- /root/.pyenv/shims/python3 --version
    same pyenv -- /root/.pyenv/shims/python3 -c 'print(sum(range(10)))'
else
    echo "skipped: pyenv shim (no /root/.pyenv/shims/python3)"
fi
if have perl; then
    section perl
    same perl -- perl -v
    same perl -- perl -MPOSIX -e 'print floor(7.5), "\n"'
fi
if have cmake; then
    section cmake
    same cmake -- cmake --version
    setup() { printf 'message(STATUS "configured")\n' > s.cmake; }
    same cmake -- cmake -P s.cmake
    unset -f setup
fi
if have clang; then
    section clang
    same clang -- clang --version
    setup() { c_main; }
    same clang -- sh -c 'clang -O1 -o hello hello.c && ./hello'
    unset -f setup
fi
if have g++; then
    section g++
    same g++ -- g++ --version
    setup() { printf '#include <iostream>\nint main() { std::cout << "hi" << std::endl; }\n' > hi.cc; }
    same g++ -- sh -c 'g++ -O1 -o hi hi.cc && ./hi'
    unset -f setup
fi
if have gfortran; then
    section gfortran
    same gfortran -- gfortran --version
    setup() { printf 'program p\n  print *, 6 * 7\nend program p\n' > p.f90; }
    same gfortran -- sh -c 'gfortran -o p p.f90 && ./p'
    unset -f setup
fi
if have ld.lld; then
    section ld.lld
    same ld.lld -- ld.lld --version
    setup() { c_main; }
    same ld.lld -- sh -c 'gcc -fuse-ld=lld -o hello hello.c && ./hello'
    unset -f setup
fi
if have ld.gold; then
    section ld.gold
    same ld.gold -- ld.gold --version
    setup() { c_main; }
    same ld.gold -- sh -c 'gcc -fuse-ld=gold -o hello hello.c && ./hello'
    unset -f setup
fi
if ! command -v nvcc > /dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    PATH=$PATH:/usr/local/cuda/bin
fi
if have nvcc; then
    section nvcc
    same nvcc -- nvcc --version
    setup() { printf '__global__ void k(int *p) { *p = 1; }\n' > k.cu; }
    same nvcc -- sh -c 'nvcc -c k.cu -o k.o && test -s k.o && echo built'
    unset -f setup
fi

if have gcc; then
    section "a RUNPATH of two directories, the library in the second"
    mkdir -p rp/first rp/second rp/bin rp/lib
    printf 'int first(void) { return 1; }\n' > rp/a.c
    printf 'int second(void) { return 2; }\n' > rp/b.c
    printf '#include <stdio.h>\nint first(void); int second(void);\nint main(void) { printf("%%d\\n", first() + second()); return 0; }\n' > rp/main.c
    gcc -shared -fPIC -o rp/first/libfirst.so rp/a.c
    gcc -shared -fPIC -o rp/second/libsecond.so rp/b.c
    # libfirst is found first: the loader then searches for libsecond
    # with an errno its success left behind.
    gcc -o rp/bin/two rp/main.c -Lrp/first -Lrp/second -lfirst -lsecond \
        -Wl,--enable-new-dtags,-rpath,"$W/rp/first:$W/rp/second"
    same runpath -- "$W/rp/bin/two"

    section "a RUNPATH of \$ORIGIN:\$ORIGIN/../lib, as the JDK's"
    cp rp/first/libfirst.so rp/second/libsecond.so rp/lib/
    gcc -o rp/bin/origin rp/main.c -Lrp/lib -lfirst -lsecond \
        -Wl,--enable-new-dtags,-rpath,'$ORIGIN:$ORIGIN/../lib'
    same origin -- "$W/rp/bin/origin"
fi

[ "$ran" -gt 0 ] || skip "none of the programs is installed"
echo "OK: $ran runs started and behaved as without cachet"
