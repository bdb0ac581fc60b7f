# bash completion for polydnn. The commands and each command's flags are
# read from the tool's own --help output, so they cannot drift from it.
_polydnn()
{
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        local cmds
        cmds=$("$1" --help 2>/dev/null | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
        COMPREPLY=($(compgen -W "$cmds help --help --version" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    case $prev in
        --input|--output|--filter|--bias-file|--save|--load|--labels|--log|--plot|--export)
            COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --model)
            COMPREPLY=($(compgen -f -X '!*.onnx' -- "$cur")); return ;;
        --npz)
            COMPREPLY=($(compgen -f -X '!*.npz' -- "$cur")); return ;;
        --lr-schedule)
            COMPREPLY=($(compgen -W "constant step cosine" -- "$cur")); return ;;
        --optimizer)
            COMPREPLY=($(compgen -W "sgd adam adamw" -- "$cur")); return ;;
        --loss)
            COMPREPLY=($(compgen -W "cross-entropy mse" -- "$cur")); return ;;
        --fit)
            COMPREPLY=($(compgen -W "pad resize" -- "$cur")); return ;;
        --data)
            COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --layout)
            COMPREPLY=($(compgen -W "NCHW NHWC nchw nhwc both" -- "$cur")); return ;;
        --seed)
            COMPREPLY=($(compgen -W "time" -- "$cur")); return ;;
        --device|-d|--param-device)
            COMPREPLY=($(compgen -W "/cpu:0 /gpu:0 /gpu:1" -- "$cur")); return ;;
    esac
    if [ "$cmd" = help ]; then
        COMPREPLY=($(compgen -W "$("$1" --help 2>/dev/null | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')" -- "$cur"))
        return
    fi
    if [ "$COMP_CWORD" -eq 2 ]; then
        case $cmd in
            bench) COMPREPLY=($(compgen -W "resnet50 vgg16 mobilenet conv --peak" -- "$cur")); [ -n "$cur" ] && [ "${cur#-}" = "$cur" ] && return ;;
            tune) COMPREPLY=($(compgen -W "resnet50 vgg16 mobilenet conv" -- "$cur")); [ -n "$cur" ] && [ "${cur#-}" = "$cur" ] && return ;;
            run-example) COMPREPLY=($(compgen -W "towers cnn" -- "$cur")); return ;;
            run) [ "${cur#-}" = "$cur" ] && { COMPREPLY=($(compgen -f -X '!*.onnx' -- "$cur")); return; } ;;
        esac
    fi
    local flags
    flags=$("$1" "$cmd" --help 2>/dev/null | grep -oE '^  (-[A-Za-z], )? *--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+')
    COMPREPLY+=($(compgen -W "$flags" -- "$cur"))
}
complete -F _polydnn polydnn
