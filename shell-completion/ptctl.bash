# SPDX-License-Identifier: MIT
#
# bash completion for ptctl. The verbs and each verb's options are asked
# of ptctl itself (ptctl --help, ptctl VERB --help), so they are always
# those of the installed ptctl. Needs nothing from the bash-completion
# package.

_ptctl() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local verb= i w
    local global="--help --version --socket --json"

    # The verb: the first word that is not an option or --socket's path.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $w == --socket ]]; then
            ((i++))
        elif [[ $w != -* ]]; then
            verb=$w
            break
        fi
    done

    case $prev in
        --socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        -D|--directory|--symfs|--debug-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --pt|--image|--kcore|--output|-o) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --decoder) COMPREPLY=($(compgen -W "fast libipt" -- "$cur")); return ;;
    esac

    if [[ -z $verb ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$global" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(ptctl --help 2>/dev/null |
                sed -n '/^Verbs:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')" -- "$cur"))
        fi
        return
    fi

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(ptctl "$verb" --help 2>/dev/null |
            grep -oE -- '(^| )--?[a-zA-Z0-9][a-zA-Z0-9-]*' | tr -d ' ' | sort -u) $global" -- "$cur"))
        return
    fi
    case $verb in
        watchdog)
            [[ $prev == watchdog ]] && COMPREPLY=($(compgen -W "register ping remove list" -- "$cur")) ;;
        info|decode|export)
            COMPREPLY=($(compgen -f -- "$cur")) ;;
    esac
}

complete -F _ptctl ptctl
