# bash completion for cachet                                 -*- shell-script -*-
#
# Installed as share/bash-completion/completions/cachet (bash-completion loads
# it on first use); or source this file from ~/.bashrc.
#
# Completes subcommands, each subcommand's options and their values, setting
# names after `cachet config` (asked from cachet itself, so new settings
# appear), and after `cachet run --` (or the launcher form, `cachet gcc ...`)
# the command and its own arguments, through the command's completion.

_cachet_subcommands="run explain show log config stats report gc clear diff repro remote keygen help"

# Used when `cachet config` cannot list the settings (a broken configuration).
_cachet_settings="dir max_size max_age namespace env_ignore env_per_run base_dir compression_level
verify_rate nondeterministic remote sign_key trusted_keys hermetic_env read_only
ignore_paths uncacheable_commands stats_log umask log_size verbose disable recache
status_file color"

_cachet_setting_names() {
    local names
    names=$("${1:-cachet}" config 2> /dev/null | awk '{ print $1 }')
    echo "${names:-$_cachet_settings}"
}

# _cachet_command_at INDEX: completes a command line starting at word INDEX.
_cachet_command_at() {
    if declare -F _command_offset > /dev/null; then
        _command_offset "$1"
    elif [ "$COMP_CWORD" -eq "$1" ]; then
        mapfile -t COMPREPLY < <(compgen -c -- "${COMP_WORDS[COMP_CWORD]}")
    else
        mapfile -t COMPREPLY < <(compgen -f -- "${COMP_WORDS[COMP_CWORD]}")
    fi
}

# _cachet_step_command FIRST OPTIONS_WITH_ARG OPTIONS: for run, explain and
# repro: options up to `--` or the first non-option, then a command. FIRST
# is the index of the subcommand's first argument.
_cachet_step_command() {
    local i=$1 with_arg=$2 options=$3 w
    while [ "$i" -lt "$COMP_CWORD" ]; do
        w=${COMP_WORDS[i]}
        if [ "$w" = -- ]; then
            _cachet_command_at $((i + 1))
            return
        fi
        case " $with_arg " in
            *" $w "*) i=$((i + 2)); continue ;;
        esac
        case $w in
            -*) i=$((i + 1)) ;;
            *) _cachet_command_at "$i"; return ;;
        esac
    done
    local cur=${COMP_WORDS[COMP_CWORD]}
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$options --" -- "$cur")
    else
        _cachet_command_at "$COMP_CWORD"
    fi
}

_cachet() {
    local cur prev sub cachet_bin=${COMP_WORDS[0]}
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()

    if [ "$COMP_CWORD" -eq 1 ]; then
        case $cur in
            -*) mapfile -t COMPREPLY < <(compgen -W "--help --version -v --verbose --verify
                    --check --require-symbols --" -- "$cur") ;;
            '') mapfile -t COMPREPLY < <(compgen -W "$_cachet_subcommands" -- "$cur") ;;
            # The launcher form: any command is as good as a subcommand.
            *) mapfile -t COMPREPLY < <(compgen -W "$_cachet_subcommands" -- "$cur"; compgen -c -- "$cur") ;;
        esac
        return
    fi

    sub=${COMP_WORDS[1]}
    case $sub in
        run)
            case $prev in
                --require-symbols) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
                --check) return ;;
            esac
            _cachet_step_command 2 "--check --require-symbols" \
                "-v --verbose --verify --check --require-symbols --help"
            ;;
        explain)
            _cachet_step_command 2 "" "--all --json --help"
            ;;
        repro)
            case $prev in
                -n | --runs) mapfile -t COMPREPLY < <(compgen -W "2 3 5 10" -- "$cur"); return ;;
                --vary)
                    local prefix="" word=$cur
                    if [[ $cur == *,* ]]; then
                        prefix=${cur%,*},
                        word=${cur##*,}
                    fi
                    mapfile -t COMPREPLY < <(compgen -P "$prefix" -W "all none env tz locale umask aslr cpus
                        time dirorder home path user host kernel buildpath -env -tz -locale -umask
                        -aslr -cpus -time -dirorder -home -path -user -host -kernel -buildpath" -- "$word")
                    compopt -o nospace 2> /dev/null
                    return
                    ;;
            esac
            _cachet_step_command 2 "-n --runs --vary" "-n --runs --vary --bisect --json --help"
            ;;
        config)
            local args=() i
            for ((i = 2; i < COMP_CWORD; i++)); do
                [ "${COMP_WORDS[i]}" = --cache ] || args+=("${COMP_WORDS[i]}")
            done
            if [ ${#args[@]} -eq 0 ]; then
                mapfile -t COMPREPLY < <(compgen -W "--cache --help $(_cachet_setting_names "$cachet_bin")" -- "$cur")
            elif [ ${#args[@]} -eq 1 ]; then
                case ${args[0]} in
                    read_only | verbose | disable | recache)
                        mapfile -t COMPREPLY < <(compgen -W "true false" -- "$cur") ;;
                    nondeterministic) mapfile -t COMPREPLY < <(compgen -W "warn rerun" -- "$cur") ;;
                    color) mapfile -t COMPREPLY < <(compgen -W "auto never always" -- "$cur") ;;
                    compression_level) mapfile -t COMPREPLY < <(compgen -W "1 3 9 19" -- "$cur") ;;
                    max_size | log_size) mapfile -t COMPREPLY < <(compgen -W "500M 1G 5G 20G" -- "$cur") ;;
                    max_age) mapfile -t COMPREPLY < <(compgen -W "12h 7d 30d" -- "$cur") ;;
                    umask) mapfile -t COMPREPLY < <(compgen -W "002 022 077" -- "$cur") ;;
                    dir | base_dir) mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
                    status_file | stats_log | sign_key | trusted_keys)
                        mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
                esac
            fi
            ;;
        stats)
            case $prev in
                --log) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
            esac
            mapfile -t COMPREPLY < <(compgen -W "--json -z --zero --log --help" -- "$cur")
            ;;
        log)
            [ "$prev" = -n ] && return
            mapfile -t COMPREPLY < <(compgen -W "-n --json --help" -- "$cur")
            ;;
        show)
            if [[ $cur == -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "--inputs --json --help" -- "$cur")
            else
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            fi
            ;;
        diff)
            [ "$prev" = --max-lines ] && return
            if [[ $cur == -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "--json --max-lines --help" -- "$cur")
            else
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            fi
            ;;
        report)
            case $prev in
                -o | --output) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
                -n) return ;;
            esac
            mapfile -t COMPREPLY < <(compgen -W "-o --output -n --help" -- "$cur")
            ;;
        gc)
            case $prev in
                --max-size) mapfile -t COMPREPLY < <(compgen -W "0 500M 1G 5G" -- "$cur"); return ;;
                --max-age) mapfile -t COMPREPLY < <(compgen -W "12h 7d 30d" -- "$cur"); return ;;
            esac
            mapfile -t COMPREPLY < <(compgen -W "--max-size --max-age -n --dry-run --help" -- "$cur")
            ;;
        remote)
            if [ "$COMP_CWORD" -eq 2 ]; then
                mapfile -t COMPREPLY < <(compgen -W "flush status --help" -- "$cur")
            elif [ "${COMP_WORDS[2]}" = flush ]; then
                mapfile -t COMPREPLY < <(compgen -W "-q --quiet" -- "$cur")
            elif [ "${COMP_WORDS[2]}" = status ]; then
                mapfile -t COMPREPLY < <(compgen -W "--json" -- "$cur")
            fi
            ;;
        keygen)
            if [ "$prev" = -f ]; then
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            else
                mapfile -t COMPREPLY < <(compgen -W "-f --help" -- "$cur")
            fi
            ;;
        clear)
            mapfile -t COMPREPLY < <(compgen -W "--help" -- "$cur")
            ;;
        help)
            if [ "$COMP_CWORD" -eq 2 ]; then
                mapfile -t COMPREPLY < <(compgen -W "$_cachet_subcommands" -- "$cur")
            fi
            ;;
        -*)
            # Options of run before a launched command: cachet -v gcc ...
            _cachet_step_command 1 "--check --require-symbols" \
                "-v --verbose --verify --check --require-symbols"
            ;;
        *)
            # The launcher form: cachet gcc -c a.c
            _cachet_command_at 1
            ;;
    esac
}
complete -F _cachet cachet
