# common.sh: what the CLI test scripts share (sourced by test_cli.sh and
# test_gpt.sh): pass/fail counting, running a command with its output kept
# in files, and checking a file's text.
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
# run NAME EXPECTED_RC CMD...: runs CMD with output in NAME.out/NAME.err.
run() {
  local name=$1 want=$2
  shift 2
  "$@" >"$name.out" 2>"$name.err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit $rc, expected $want"
    sed 's/^/  | /' "$name.out" "$name.err" | tail -20
    return 1
  fi
  return 0
}
# expect_text NAME FILE PATTERN: FILE contains PATTERN (grep -E).
expect_text() {
  if grep -Eq -- "$3" "$2"; then pass "$1"; else
    fail "$1: '$3' not in $2"
    sed 's/^/  | /' "$2" | tail -10
  fi
}
