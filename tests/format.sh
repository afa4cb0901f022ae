#!/usr/bin/env bash
# Every C source and header of the tree is formatted as .clang-format says,
# so that a reformat never hides in a change and reviews read only what
# changed. Fix with: clang-format -i $(git ls-files '*.c' '*.h')
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v clang-format >/dev/null || { echo "skipped: clang-format is not installed"; exit 77; }
cd "$ROOT"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files '*.c' '*.h')
else
    mapfile -t files < <(find src include tests python -name '*.[ch]' 2>/dev/null | sort)
fi
# One clang-format for all files; each drifting file is named in its
# "code should be clang-formatted" diagnostics.
if out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
    echo "${#files[@]} files formatted as .clang-format says"
    exit 0
fi
mapfile -t bad < <(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
echo "not formatted as .clang-format says (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1)):"
printf '  %s\n' "${bad[@]:-?}"
echo "fix with: clang-format -i ${bad[*]:-FILE...}"
exit 1
