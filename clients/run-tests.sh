#!/usr/bin/env bash
# The clients' tests against a real `emq serve` on a real Valkey: starts
# valkey-server ($EMQ_VALKEY_SERVER) on a free loopback port and two `emq
# serve --listen 127.0.0.1:0` ($EMQ_BIN, target/debug/emq by default) on
# it, one open, one with a --tokens file under --base-path /emq; builds
# the TypeScript client (npm ci from the npm registry when
# node_modules is missing or older than the lockfile), then runs the
# Python tests (the machine's python3: unittest, end-to-end with a
# TypeScript worker included) and the TypeScript tests (the machine's
# node: node --test), and stops the servers.
#
# Prints one cargo-style line per client, `test result: ok. N passed; M
# failed`, which scripts/test's summary counts. Exits non-zero when a test
# failed or a server did not start.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
clients="$root/clients"
emq="${EMQ_BIN:-$root/target/debug/emq}"
case "$emq" in /*) ;; *) emq="$PWD/$emq" ;; esac
valkey="${EMQ_VALKEY_SERVER:-$(command -v valkey-server || true)}"

# A harness failure counts as one failed test in scripts/test's summary.
fail() {
  echo "clients: $*" >&2
  echo "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out (clients: harness)"
  exit 1
}
[ -x "$emq" ] || fail "no emq binary at $emq (cargo build -p emq, or set EMQ_BIN)"
[ -n "$valkey" ] && [ -x "$valkey" ] || fail "no valkey-server (set EMQ_VALKEY_SERVER)"
command -v python3 >/dev/null || fail "python3 is not installed"
command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are not installed"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || fail "node $(node --version) is too old: the TypeScript client needs node 20"

work="$(mktemp -d)"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# A free loopback port (the kernel's pick, released for valkey-server).
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$valkey" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --logfile "$work/valkey.log" &
pids+=($!)
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || fail "valkey-server did not listen on $port: $(tail -5 "$work/valkey.log")"

# `emq serve` prints where it serves as its first line ({"url": ...} under
# --json): serve NAME [ARGS...] starts one and sets $url to its address.
serve() {
  local name="$1"
  shift
  "$emq" --url "redis://127.0.0.1:$port" --json serve --listen 127.0.0.1:0 "$@" \
    >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  url=""
  for _ in $(seq 300); do
    url="$(python3 -c 'import json, sys
line = open(sys.argv[1]).readline()
print(json.loads(line)["url"] if line.endswith("\n") else "")' "$work/$name.out" 2>/dev/null || true)"
    [ -n "$url" ] && return
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  fail "emq serve ($name) printed no address: $(cat "$work/$name.err")"
}

serve open
export EMQ_HTTP_URL="$url"
# A second server on the same Valkey that requires tokens (a file of
# them: an operator's of every queue, a producer's of the *-scoped-*
# queues), under a base path (its printed address ends with it; the
# clients add /api/v1).
token() { # name role queue...: appends its entry to the file, prints the token
  local name="$1" role="$2" args=()
  shift 2
  for queue in "$@"; do args+=(--queue "$queue"); done
  "$emq" --json token new --name "$name" --role "$role" "${args[@]}" 2>/dev/null |
    python3 -c 'import json, sys
entry = json.load(sys.stdin)
open(sys.argv[1], "a").write(entry["toml"])
print(entry["token"])' "$work/tokens.toml"
}
EMQ_HTTP_TOKEN="$(token tests operator '*')"
EMQ_HTTP_PRODUCER_TOKEN="$(token producer producer 'py-scoped-*' 'ts-scoped-*')"
[ -n "$EMQ_HTTP_TOKEN" ] && [ -n "$EMQ_HTTP_PRODUCER_TOKEN" ] || fail "emq token new made no token"
serve guarded --tokens "$work/tokens.toml" --base-path /emq
export EMQ_HTTP_TOKEN EMQ_HTTP_PRODUCER_TOKEN EMQ_HTTP_TOKEN_URL="$url"
echo "clients: emq serve at $EMQ_HTTP_URL, and with tokens at $EMQ_HTTP_TOKEN_URL, on valkey port $port"

status=0
report() { # name passed failed
  local verdict=ok
  [ "$3" -eq 0 ] || verdict=FAILED
  # On a line of its own even when the output before it was cut short.
  printf '\ntest result: %s. %s passed; %s failed; 0 ignored; 0 measured; 0 filtered out (clients: %s)\n' \
    "$verdict" "$2" "$3" "$1"
}

echo "== clients/typescript: npm ci and build"
cd "$clients/typescript"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund --registry=https://registry.npmjs.org/
fi
npm run --silent build || fail "the TypeScript client does not build"

echo "== clients/python: python3 -m unittest"
cd "$clients/python"
PYTHONPATH="$clients/python" python3 -m unittest discover -v -s tests -t . 2>&1 | tee "$work/python.out" || status=1
# unittest ends with "Ran N tests" and "OK" or "FAILED (failures=a, errors=b, skipped=c)".
read -r ran bad skipped < <(awk '
  /^Ran [0-9]+ test/ { ran = $2 }
  /^(OK|FAILED)( \(|$)/ {
    for (i = 1; i <= NF; i++) {
      split($i, kv, "="); gsub(/[^0-9]/, "", kv[2])
      if (kv[1] ~ /failures|errors/) bad += kv[2]
      if (kv[1] ~ /skipped/) skipped += kv[2]
    }
  }
  END { print ran + 0, bad + 0, skipped + 0 }' "$work/python.out")
[ "$ran" -gt 0 ] || { status=1; bad=$((bad + 1)); }
report python "$((ran - bad - skipped))" "$bad"

echo "== clients/typescript: node --test"
cd "$clients/typescript"
node --test dist/test/*.test.js 2>&1 | tee "$work/node.out" || status=1
# node --test's TAP ends with "# pass N" and "# fail M".
read -r passed failed < <(awk '
  /^# pass [0-9]+$/ { pass = $3; seen = 1 }
  /^# fail [0-9]+$/ { fail = $3 }
  END { print pass + 0, (seen ? fail + 0 : 1) }' "$work/node.out")
[ "$passed" -gt 0 ] || { status=1; failed=$((failed + 1)); }
report typescript "$passed" "$failed"

exit "$status"
