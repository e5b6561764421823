#!/usr/bin/env bash
# The quickstart: start the demo agents on free ports, run the quickstart suite against them, stop them.
#
#   examples/quickstart/run.sh                 # any tamesu run option can follow, e.g. --junit out.xml
#
# The voice demo agent needs the voice extra (Piper and Whisper); without it the phone test is left out.
# Exits with tamesu's exit code (0 all passed, 1 a test failed, 2 config error, 3 infrastructure).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python}"
if [ -x "$root/.venv/bin/python" ] && [ -z "${PYTHON:-}" ]; then
  python="$root/.venv/bin/python"
fi

pids=()
fifos=()
cleanup() {
  for pid in ${pids[@]+"${pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
  for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid" 2>/dev/null || true; done
  for fifo in ${fifos[@]+"${fifos[@]}"}; do rm -f "$fifo"; done
}
trap cleanup EXIT INT TERM

# start_agent SCRIPT SECONDS: run an agent on port 0; its first line is "listening on URL", and
# agent_url is set to that URL (empty when the agent does not start in time).
start_agent() {
  local fifo line
  agent_url=""
  fifo="$(mktemp -u)"
  mkfifo "$fifo"
  fifos+=("$fifo")
  "$python" "$root/$1" --port 0 >"$fifo" &
  pids+=($!)
  exec 3<"$fifo"
  if IFS= read -r -t "$2" line <&3; then
    case "$line" in
      "listening on "*) agent_url="${line#listening on }" ;;
      *) echo "run.sh: unexpected first line from $1: $line" >&2 ;;
    esac
    # Keep draining the agent's output so it never blocks on a full pipe.
    cat <&3 >/dev/null &
    pids+=($!)
  fi
  exec 3<&-
}

start_agent examples/demo_agent/agent.py 30
AGENT_URL="$agent_url"
if [ -z "$AGENT_URL" ]; then
  echo "run.sh: the demo agent did not start" >&2
  exit 3
fi
export AGENT_URL

extra=()
start_agent examples/voice_agent/agent.py 120
VOICE_AGENT_URL="$agent_url"
if [ -n "$VOICE_AGENT_URL" ]; then
  export VOICE_AGENT_URL
else
  echo "run.sh: the voice demo agent did not start (pip install 'tamesu[voice]'); leaving out the phone test" >&2
  extra+=(--exclude-tags voice)
fi

status=0
"$python" -m tamesu run "$here/suite.yaml" ${extra[@]+"${extra[@]}"} "$@" || status=$?
exit "$status"
