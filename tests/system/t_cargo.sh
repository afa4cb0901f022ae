# RUSTC_WRAPPER=cachet cargo build of a small local workspace: three path
# crates, one with a build.rs, one a proc-macro. A clean rebuild is all
# hits with the same outputs; an edit re-runs exactly the crates that
# depend on it; nothing warns about the jobserver (cargo hands rustc its
# descriptors, which cachet keeps); and in cargo's default incremental mode
# an edited crate is stored, though rustc replaces its session directory.
source "$(dirname "$0")/lib.sh"

command -v cargo > /dev/null 2>&1 || skip "cargo is not installed"

W=$(workdir)
cd "$W"
mkdir -p ws/app/src ws/util/src ws/mac/src
cat > ws/Cargo.toml <<'EOF'
[workspace]
members = ["app", "util", "mac"]
resolver = "2"
EOF
cat > ws/util/Cargo.toml <<'EOF'
[package]
name = "util"
version = "0.1.0"
edition = "2021"
EOF
cat > ws/util/build.rs <<'EOF'
fn main() {
    println!("cargo:rustc-env=UTIL_FLAVOUR=built");
}
EOF
cat > ws/util/src/lib.rs <<'EOF'
pub fn greeting() -> &'static str { "hello" }
pub fn flavour() -> &'static str { env!("UTIL_FLAVOUR") }
EOF
cat > ws/mac/Cargo.toml <<'EOF'
[package]
name = "mac"
version = "0.1.0"
edition = "2021"
[lib]
proc-macro = true
EOF
cat > ws/mac/src/lib.rs <<'EOF'
use proc_macro::TokenStream;
#[proc_macro]
pub fn answer(_: TokenStream) -> TokenStream { "42".parse().unwrap() }
EOF
cat > ws/app/Cargo.toml <<'EOF'
[package]
name = "app"
version = "0.1.0"
edition = "2021"
[dependencies]
util = { path = "../util" }
mac = { path = "../mac" }
EOF
cat > ws/app/src/main.rs <<'EOF'
fn main() { println!("{} {} {}", util::greeting(), util::flavour(), mac::answer!()); }
EOF
cd ws
export RUSTC_WRAPPER="$CACHET_BIN"
export CARGO_TERM_COLOR=never

# build: cargo build; its stderr in build.err, and none of it may mention
# the jobserver. One job at a time: rustc lists its `-L dependency=`
# directory, and a listing is keyed, so under -j2 a compile that starts
# while another crate's files land there is keyed on a listing the next
# build may not meet (a miss, never a wrong hit; see the README). The hits
# counted here must not depend on the scheduler.
build() {
    cargo build --offline -j1 2> build.err || { cat build.err >&2; fail "cargo build failed"; }
    if grep -i jobserver build.err; then
        fail "cargo build printed a jobserver warning"
    fi
}

# count RESULT FROM: status lines from line FROM on with that result.
count() {
    tail -n +"$2" "$CACHET_STATUS_FILE" | grep -c "\"result\": \"$1\"" || true
}
# Every status line from line FROM on is a hit (the target probe too, which
# reads its program from /dev/null: keyed as such).
all_hits_from() {
    local bad
    bad=$(tail -n +"$1" "$CACHET_STATUS_FILE" | grep -v '"result": "hit"' || true)
    [ -z "$bad" ] || fail "expected only hits, got: $bad"
}

section "without incremental compilation: a first build, then a clean rebuild is all hits"
export CARGO_INCREMENTAL=0
build
[ "$(./target/debug/app)" = "hello built 42" ] || fail "app printed $(./target/debug/app)"
[ "$(count miss 1)" -ge 4 ] || fail "expected the 4 crates' compiles to miss: $(cat "$CACHET_STATUS_FILE")"
cp target/debug/app app.first
cargo clean
from=$(($(status_count) + 1))
build
all_hits_from "$from"
[ "$(count hit "$from")" -ge 4 ] || fail "expected at least 4 hits"
cmp app.first target/debug/app || fail "the rebuilt app differs from the first"
[ "$(./target/debug/app)" = "hello built 42" ] || fail "the rebuilt app printed $(./target/debug/app)"

section "an edit re-runs exactly the crates that depend on it"
echo 'pub fn unused() {}' >> util/src/lib.rs
from=$(($(status_count) + 1))
build
# util and app; not mac, not util's build script.
[ "$(count miss "$from")" -eq 2 ] || fail "expected 2 misses after editing util: $(tail -n +"$from" "$CACHET_STATUS_FILE")"
[ "$(count uncacheable "$from")" -eq 0 ] || fail "nothing should be uncacheable: $(tail -n +"$from" "$CACHET_STATUS_FILE")"
cargo clean
from=$(($(status_count) + 1))
build
all_hits_from "$from"

section "cargo's default incremental mode: an edited crate is stored, and rebuilt from the cache"
unset CARGO_INCREMENTAL
export CARGO_TARGET_DIR="$W/ws/target-incremental"
build
echo 'pub fn unused_too() {}' >> util/src/lib.rs
from=$(($(status_count) + 1))
build
if tail -n +"$from" "$CACHET_STATUS_FILE" | grep '"input modified during run"'; then
    fail "an incremental compile was not stored"
fi
[ "$(count miss "$from")" -eq 2 ] || fail "expected 2 misses: $(tail -n +"$from" "$CACHET_STATUS_FILE")"
[ "$("$CARGO_TARGET_DIR/debug/app")" = "hello built 42" ] || fail "the incremental app is wrong"

check_status_file_format
