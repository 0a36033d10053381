#!/usr/bin/env bash
# The README's newcomer path, literally, on this checkout: `npm start` with nothing set
# (no DATABASE_URL: the embedded PostgreSQL in ./.sluice), then `npx sluice stats`, which
# must find the running server's database through .sluice/local.json. The server is then
# stopped with SIGTERM and must exit by itself, removing local.json.
set -euo pipefail
cd "$(dirname "$0")/.."
unset DATABASE_URL TEST_DATABASE_URL SLUICE_URL SLUICE_API_TOKEN SLUICE_ADMIN_TOKEN

log="$(mktemp)"
setsid npm start >"$log" 2>&1 &
server=$!
fail() {
  echo "newcomer path: $1" >&2
  cat "$log" >&2
  kill -KILL -- "-$server" 2>/dev/null || true
  exit 1
}

# Bounded wait for the start-up line (a first start initialises the database).
for _ in $(seq 1 360); do
  grep -q "Sluice is listening on" "$log" && break
  kill -0 "$server" 2>/dev/null || fail "npm start exited before listening"
  sleep 0.5
done
grep -q "Sluice is listening on" "$log" || fail "npm start did not listen within 180 s"

out="$(npx sluice stats 2>&1)" || fail "npx sluice stats failed: $out"
echo "$out" | grep -q "demo" || fail "npx sluice stats did not list the demo queue: $out"

kill -TERM -- "-$server"
for _ in $(seq 1 120); do
  kill -0 "$server" 2>/dev/null || break
  sleep 0.5
done
kill -0 "$server" 2>/dev/null && fail "npm start did not stop within 60 s of SIGTERM"
[ ! -e .sluice/local.json ] || fail ".sluice/local.json left behind after the server stopped"
echo "newcomer path: npm start, then npx sluice stats with nothing set: ok"
rm -f "$log"
