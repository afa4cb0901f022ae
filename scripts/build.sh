#!/usr/bin/env bash
# Configures and builds cachet with CMake + Ninja.
#
#   scripts/build.sh [BUILD_DIR [CMAKE_ARGS...]]     default BUILD_DIR: build
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
shift || true
cmake -S "$ROOT" -B "$BUILD" -G Ninja "$@"
ninja -C "$BUILD"
