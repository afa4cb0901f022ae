# The documentation keeps up with the program: every subcommand has
# `cachet help SUBCOMMAND`, a section in the manual and bash completion of
# every option its help names; every setting `cachet config` lists is in the
# manual (with its CACHET_ variable) and completes after `cachet config`; the
# manual formats without warnings.
source "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MAN="$ROOT/docs/cachet.1"
COMPLETION="$ROOT/completion/cachet.bash"
command -v groff > /dev/null || fail "groff is not installed (scripts/setup-debian.sh installs groff-base)"
# Settings from defaults only: no user or cache file may add to them.
export HOME="$T/home" XDG_CONFIG_HOME="$T/config"
mkdir -p "$HOME"

section "the manual formats without warnings, with the usual sections"
groff -man -Tascii -P-cbou -ww "$MAN" > "$T/man.txt" 2> "$T/groff.err"
[ ! -s "$T/groff.err" ] || fail "groff warns about docs/cachet.1: $(head -n 5 "$T/groff.err")"
for s in NAME SYNOPSIS DESCRIPTION COMMANDS SETTINGS ENVIRONMENT FILES "EXIT STATUS" EXAMPLES "SEE ALSO"; do
    grep -qx "$s" "$T/man.txt" || fail "the manual has no $s section"
done
version=$(cachet --version)
grep -qF "${version#cachet }" "$MAN" || fail "the manual's version is not that of '$version'"

section "every subcommand: help, a manual section, completion of its options"
cachet help > "$T/help.txt"
mapfile -t SUBS < <(sed -n '/^subcommands:/,/^$/p' "$T/help.txt" | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ "${#SUBS[@]}" -ge 10 ] || fail "found only ${#SUBS[@]} subcommands in cachet help"
# The manual's sources, one chunk per `.SS "cachet SUBCOMMAND ..."`, with
# roff's \- and font escapes undone.
python3 - "$MAN" "$T/sections" <<'EOF'
import os, re, sys
text = open(sys.argv[1]).read().replace("\\-", "-")
text = re.sub(r"\\f[BIRP]", "", text)
os.makedirs(sys.argv[2])
for chunk in re.split(r'^\.SS "', text, flags=re.M)[1:]:
    m = re.match(r"cachet ([a-z]+)", chunk)
    if m:
        end = re.search(r"^\.SH ", chunk, flags=re.M)
        open(os.path.join(sys.argv[2], m.group(1)), "w").write(chunk[:end.start()] if end else chunk)
EOF
# complete WORD...: the completions bash offers for the command line WORD...
complete_words() {
    bash -c '
        source "$1"
        shift
        COMP_WORDS=("$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _cachet
        printf "%s\n" "${COMPREPLY[@]}"' complete "$COMPLETION" "$@"
}
# options_of < HELP: the options a help text offers: those in its usage lines
# and those that start a line of its option list ("  -n N, --runs N  ...").
options_of() {
    python3 -c '
import re, sys
opts = set()
usage = True
for line in sys.stdin.read().splitlines():
    if not line.strip():
        usage = False
        continue
    if usage:
        part = line
    elif re.match(r"^\s+-", line):
        part = re.split(r"(?<=\S)\s{2,}", line.strip(), maxsplit=1)[0]
    else:
        continue
    opts.update(m.group(1) for m in re.finditer(r"(?:^|[\s\[|,(])(--?[a-z][a-z-]*)", part))
print("\n".join(sorted(opts)))'
}
complete_words cachet "" > "$T/subs.txt"
for sub in "${SUBS[@]}"; do
    cachet help "$sub" > "$T/help-$sub.txt" || fail "cachet help $sub failed"
    grep -q "^usage: cachet $sub\b" "$T/help-$sub.txt" || fail "cachet help $sub does not start with its usage"
    cachet "$sub" --help > "$T/dash-help-$sub.txt" 2>&1 || fail "cachet $sub --help failed"
    cmp -s "$T/help-$sub.txt" "$T/dash-help-$sub.txt" || fail "cachet $sub --help differs from cachet help $sub"
    [ -f "$T/sections/$sub" ] || fail "the manual has no section for cachet $sub"
    grep -qx "$sub" "$T/subs.txt" || fail "completion does not offer the subcommand $sub"
    case $sub in
        remote) { complete_words cachet remote -; complete_words cachet remote flush -
                  complete_words cachet remote status -; } > "$T/comp-$sub.txt" ;;
        *) complete_words cachet "$sub" - > "$T/comp-$sub.txt" ;;
    esac
    for opt in $(options_of < "$T/help-$sub.txt"); do
        grep -qE -- "(^|[^A-Za-z0-9_-])$opt([^A-Za-z0-9_-]|\$)" "$T/sections/$sub" ||
            fail "the manual's section on cachet $sub does not mention $opt"
        grep -qx -- "$opt" "$T/comp-$sub.txt" || fail "completion of 'cachet $sub -' does not offer $opt"
    done
done
complete_words cachet - > "$T/comp-top.txt"
for opt in --version --help; do
    grep -qx -- "$opt" "$T/comp-top.txt" || fail "completion of 'cachet -' does not offer $opt"
done

section "every setting: in the manual, its variable in ENVIRONMENT, completed after cachet config"
cachet config > "$T/config.txt" || fail "cachet config failed"
mapfile -t KEYS < <(awk '{ print $1 }' "$T/config.txt")
[ "${#KEYS[@]}" -ge 20 ] || fail "cachet config lists only ${#KEYS[@]} settings"
sed -n '/^SETTINGS$/,/^[A-Z]/p' "$T/man.txt" > "$T/man-settings.txt"
sed -n '/^ENVIRONMENT$/,/^FILES$/p' "$T/man.txt" > "$T/man-env.txt"
complete_words cachet config "" > "$T/comp-config.txt"
for key in "${KEYS[@]}"; do
    grep -qE "^       $key( |\$)" "$T/man-settings.txt" || fail "the manual's SETTINGS do not describe $key"
    var=CACHET_${key^^}
    grep -qw "$var" "$T/man-env.txt" || fail "the manual's ENVIRONMENT does not name $var"
    grep -qx "$key" "$T/comp-config.txt" || fail "completion after 'cachet config' does not offer $key"
    grep -qw "$key" "$COMPLETION" || fail "the completion's fallback list lacks $key"
done

section "completion: values of settings, commands after run --, the launcher form"
complete_words cachet config color "" > "$T/c.txt"
[ "$(sort "$T/c.txt" | tr '\n' ' ')" = "always auto never " ] || fail "config color completes to $(cat "$T/c.txt")"
complete_words cachet run -v -- gc > "$T/c.txt"
grep -qx gcc "$T/c.txt" || fail "'cachet run -v -- gc' does not complete to gcc"
complete_words cachet run --check true sh > "$T/c.txt"
grep -qx sh "$T/c.txt" || fail "'cachet run --check CMD sh' does not complete commands"
complete_words cachet repro --vary all,-ti > "$T/c.txt"
[ "$(cat "$T/c.txt")" = "all,-time" ] || fail "repro --vary all,-ti completes to $(cat "$T/c.txt")"
