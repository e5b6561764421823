#!/usr/bin/env bash
# The quickstart: start the demo agent on a free port, run the quickstart suite against it, stop it.
#
#   examples/quickstart/run.sh                 # any tamesu run option can follow, e.g. --junit out.xml
#
# Exits with tamesu's exit code (0 all passed, 1 a test failed, 2 config error, 3 infrastructure).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python}"
if [ -x "$root/.venv/bin/python" ] && [ -z "${PYTHON:-}" ]; then
  python="$root/.venv/bin/python"
fi

fifo="$(mktemp -u)"
mkfifo "$fifo"
"$python" "$root/examples/demo_agent/agent.py" --port 0 >"$fifo" &
agent=$!
cleanup() {
  kill "$agent" 2>/dev/null || true
  wait "$agent" 2>/dev/null || true
  rm -f "$fifo"
}
trap cleanup EXIT INT TERM

# The agent's first line is "listening on http://127.0.0.1:PORT".
exec 3<"$fifo"
if ! IFS= read -r -t 30 line <&3; then
  echo "run.sh: the demo agent did not start" >&2
  exit 3
fi
case "$line" in
  "listening on "*) AGENT_URL="${line#listening on }" ;;
  *) echo "run.sh: unexpected first line from the demo agent: $line" >&2; exit 3 ;;
esac
export AGENT_URL
# Keep draining the agent's output so it never blocks on a full pipe.
cat <&3 >/dev/null &
exec 3<&-

status=0
"$python" -m tamesu run "$here/suite.yaml" "$@" || status=$?
exit "$status"
