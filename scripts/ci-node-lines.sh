#!/usr/bin/env bash
# The engine's and the server's tests on the other Node lines that `engines` names: the
# active LTS lines, 22 and 24 (CI's own node is 20). The long scenarios (many processes,
# SIGKILLs, fuzzing) and the browser's pages run on Node 20 only: they test the engine's
# logic and the page, which the line does not change, at minutes each. Each node comes from the npm registry
# (the `node` package, which fetches that line's binary) into a throwaway prefix; the tests
# then run with that binary, over this checkout's build and node_modules. Output goes to a
# log, printed when a run fails, so CI's summary stays the main suite's.
#
#   bash scripts/ci-node-lines.sh          # 22 and 24
#   bash scripts/ci-node-lines.sh 24       # one line
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ci-summary.sh

LONG_SCENARIOS=()
for file in sluice/test/processes sluice/test/flows sluice/test/chaos sluice/test/fuzz sluice/test/handler-rate \
  sluice/test/crash server/test/fuzz server/test/dashboard server/test/python-; do
  LONG_SCENARIOS+=("!packages/$file")
done

run_on_line() {
  local line="$1" prefix log status=0 started
  prefix="$(mktemp -d)"
  log="$(mktemp)"
  started=$SECONDS
  npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "node@$line" >"$log" 2>&1 || status=$?
  local node="$prefix/node_modules/.bin/node"
  if [ "$status" -eq 0 ]; then
    echo "engine and server tests on Node $("$node" --version)"
    # TAP whatever the line's default reporter (spec from Node 23 on), for the summary below.
    NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--test-reporter=tap" \
      "$node" scripts/test.mjs packages/sluice packages/server "${LONG_SCENARIOS[@]}" >"$log" 2>&1 || status=$?
  fi
  summarize_tap_log "$log" "$status" "on Node $line in $((SECONDS - started)) s"
  rm -rf "$prefix" "$log"
  return "$status"
}

status=0
for line in ${@:-22 24}; do
  run_on_line "$line" || status=$?
done
exit "$status"
