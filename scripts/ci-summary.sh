# Sourced by the CI scripts that run a test suite with its output in a log: one summary line
# from the log's TAP totals, and, when the run failed, the failing tests and the log's end.
#
#   summarize_tap_log <log> <exit status> <label, e.g. "as root: proof tests">
summarize_tap_log() {
  local log="$1" status="$2" label="$3" passed failed skipped
  passed="$(sed -n 's/^# pass //p' "$log" | tail -1)"
  failed="$(sed -n 's/^# fail //p' "$log" | tail -1)"
  skipped="$(sed -n 's/^# skipped //p' "$log" | tail -1)"
  echo "  $label: ${passed:-0} passed, ${failed:-?} failed, ${skipped:-0} skipped (exit $status)"
  if [ "$status" -ne 0 ]; then
    grep -E '^not ok|^# Subtest' "$log" | grep -B1 '^not ok' || true
    tail -n 80 "$log"
  fi
}
