#!/usr/bin/env bash
# The proof engine's tests where a newcomer often puts a checkout: a private directory
# (mktemp -d makes it 0700), once as root and once as a user who is not root. There the
# sandbox uid cannot read the project's toolchain, and RLIMIT_NPROC holds only for a
# non-root uid: the engine must bound runs all the same, or refuse them.
#
# The files run there are those whose runs meet the sandbox: bounds and limits, isolation and
# escapes, and each runner (pytest, Jest, pgTAP). The rest of the proof tests (families,
# integrity, mutation, the LLM saboteur) judge what runs return and run in the main suite.
#
# Each clone reuses this checkout's installed node_modules (copied: the workspaces'
# links in it are relative), so no download is needed.
set -euo pipefail
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
source "$source_dir/scripts/ci-summary.sh"
user="${SLUICE_CI_USER:-sluice-ci}"
SANDBOX_TESTS=""
for name in bounds limits isolation escapes pytest jest pgtap; do
  SANDBOX_TESTS="$SANDBOX_TESTS packages/proof/test/$name.test.ts"
done

run_in_clone() {
  local who="$1" dir
  if [ "$who" = root ]; then
    dir="$(mktemp -d)"
  else
    dir="$(runuser -u "$who" -- mktemp -d)"
  fi
  echo "proof tests as $who in a private clone: $dir ($(stat -c %a "$dir"))"
  git clone --quiet "$source_dir" "$dir/sluice"
  (cd "$source_dir" && find . -name node_modules -prune -not -path './.git/*' -print) | while read -r modules; do
    mkdir -p "$dir/sluice/$(dirname "$modules")"
    cp -a "$source_dir/$modules" "$dir/sluice/$modules"
  done
  [ "$who" = root ] || chown -R "$who:" "$dir/sluice"
  local cmd="cd '$dir/sluice' && npm run build --silent && node scripts/test.mjs $SANDBOX_TESTS"
  local status=0 log
  log="$(mktemp)"
  if [ "$who" = root ]; then
    bash -c "$cmd" >"$log" 2>&1 || status=$?
  else
    # A user who is not root gets no control group here: its runs' memory is bounded per
    # process only (rlimits), which the engine refuses unless accepted by name.
    runuser -u "$who" -- env -u DATABASE_URL -u TEST_DATABASE_URL SLUICE_PROOF_ALLOW_PER_PROCESS_MEMORY=1 HOME="$(getent passwd "$who" | cut -d: -f6)" bash -c "$cmd" >"$log" 2>&1 || status=$?
  fi
  summarize_tap_log "$log" "$status" "as $who: proof tests"
  rm -rf "$dir" "$log"
  return "$status"
}

id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
# Arguments name who to run as (for a rerun of one); by default root, then the user.
status=0
for who in ${@:-root $user}; do
  run_in_clone "$who" || status=$?
done
exit "$status"
