#!/bin/sh
# The man page (polydnn.1) and the tool's own help cannot drift: every
# command the tool's usage lists has a section, and every flag that
# `polydnn CMD --help` prints appears in the page. Also: `polydnn help
# CMD` prints CMD's help, and the page renders without groff warnings.
top=${PDNN_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
tool=${POLYDNN_TOOL:-./polydnn}
page="$top/polydnn.1"
fail=0 pass=0
check() { if [ "$1" = 0 ]; then pass=$((pass + 1)); else echo "FAIL: $2"; fail=$((fail + 1)); fi; }
# The page spells '-' as '\-'; compare the plain text.
plain=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$page")
cmds=$("$tool" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } /^$/ && on { on = 0 }')
[ -n "$cmds" ]; check $? "no commands parsed from polydnn --help"
for cmd in $cmds; do
    printf '%s\n' "$plain" | grep -q "^\.SS \"polydnn $cmd "; check $? "polydnn.1 has no section for '$cmd'"
    help=$("$tool" "$cmd" --help); check $? "polydnn $cmd --help failed"
    [ "$("$tool" help "$cmd")" = "$help" ]; check $? "polydnn help $cmd differs from polydnn $cmd --help"
    # The command's own section: from its .SS line to the next .SS or .SH.
    section=$(printf '%s\n' "$plain" | awk -v c=".SS \"polydnn $cmd " 'index($0, c) == 1 { on = 1; print; next } on && /^\.S[SH] / { on = 0 } on')
    for flag in $(printf '%s\n' "$help" | grep -oE '^  (-[A-Za-z], )? *--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+|-[A-Za-z]\b' | sort -u); do
        [ "$flag" = --help ] || [ "$flag" = -h ] && continue
        printf '%s\n' "$section" | grep -qE -- "(^|[ ,])$flag([ ,=]|$)"; check $? "polydnn $cmd $flag is in --help but not in polydnn.1's $cmd section"
    done
done
"$tool" help no-such-command >/dev/null 2>&1; [ $? -eq 2 ]; check $? "polydnn help no-such-command should exit 2"
# The bash completion offers every command, and a command's flags.
if command -v bash >/dev/null 2>&1; then
    got=$(bash -c '. "$1/tools/polydnn.bash"
        t() { COMP_WORDS=("$2" "$@"); COMP_WORDS=("${COMP_WORDS[@]:0:1}" "${COMP_WORDS[@]:3}"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _polydnn "$2"; echo "${COMPREPLY[*]}"; }
        t "$1" "$2" ""; t "$1" "$2" train --batch-s' _ "$top" "$tool")
    for cmd in $cmds; do
        printf '%s\n' "$got" | head -n 1 | grep -qw -- "$cmd"; check $? "the bash completion does not offer '$cmd'"
    done
    [ "$(printf '%s\n' "$got" | tail -n 1)" = --batch-size ]; check $? "the bash completion of 'train --batch-s': $(printf '%s\n' "$got" | tail -n 1)"
fi
if command -v groff >/dev/null 2>&1; then
    # -ww: every warning; only line adjustment of the long algorithm lists is tolerated.
    warnings=$(groff -man -ww -z "$page" 2>&1 | grep -v 'cannot adjust line')
    [ -z "$warnings" ]; check $? "groff warns about polydnn.1: $warnings"
fi
echo "$pass passed, $fail failed, 0 skipped"
[ $fail -eq 0 ]
