#!/usr/bin/env bash
# Installs what is missing, builds cachet twice (normal, and ASan+UBSan) and
# runs every test (unit and system) against each build with CTest; then a
# third build with clang runs the libFuzzer targets of tests/fuzz for a
# bounded time each (CACHET_FUZZ_SECONDS, default 20). A Release build (-O3,
# whose warnings gcc finds where -O2 finds none, and warnings are errors) is
# compiled, not tested: it is what `cmake -DCMAKE_BUILD_TYPE=Release` users get.
#
#   scripts/test-all.sh
#
# Build directories: $BUILD_DIR (default build/) and $ASAN_BUILD_DIR
# (default build-asan/), $FUZZ_BUILD_DIR (default build-fuzz/),
# $RELEASE_BUILD_DIR (default build-release/). Extra ctest
# arguments: $CTEST_ARGS (e.g. "-R gcc").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-$ROOT/build-asan}
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
RELEASE_BUILD_DIR=${RELEASE_BUILD_DIR:-$ROOT/build-release}
JOBS=$(nproc)

"$ROOT/scripts/setup-debian.sh"

failed=()
build_suite() {
    local name=$1 dir=$2
    shift 2
    echo "=== $name: configure and build in $dir"
    cmake -S "$ROOT" -B "$dir" -G Ninja "$@"
    ninja -C "$dir"
}

run_suite() {
    local name=$1 dir=$2
    build_suite "$@"
    echo "=== $name: ctest"
    # shellcheck disable=SC2086
    if ! ctest --test-dir "$dir" -j "$JOBS" --output-on-failure ${CTEST_ARGS:-}; then
        failed+=("$name")
    fi
}

run_suite "normal build" "$BUILD_DIR"
run_suite "ASan+UBSan build" "$ASAN_BUILD_DIR" -DCACHET_SANITIZE=ON
run_suite "fuzz build (clang, libFuzzer)" "$FUZZ_BUILD_DIR" -DCMAKE_C_COMPILER=clang -DCACHET_FUZZ=ON

build_suite "Release build (-O3)" "$RELEASE_BUILD_DIR" -DCMAKE_BUILD_TYPE=Release

if [ ${#failed[@]} -ne 0 ]; then
    echo "=== FAILED: ${failed[*]}"
    exit 1
fi
echo "=== all tests passed (normal, ASan+UBSan and fuzz builds; the Release build compiles)"
