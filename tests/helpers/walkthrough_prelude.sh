# What the walkthrough (tests/readme_test.ts) defines before each file's blocks: every file runs
# in a bash of its own, from this state, so no file reads a variable another file set. The node
# (and hub) a file starts keep running for the next files; their process groups are in
# $WORK/node.pid and $WORK/hub.pid, and `__stop_all` ends them.
set -eEuo pipefail
trap 'echo "::failed at script lines $LINENO ${BASH_LINENO[*]}: $BASH_COMMAND" >&2' ERR
curl() {
  local headers rc=0
  headers=$(mktemp)
  command curl -D "$headers" "$@" || rc=$?
  awk -v l="${BASH_LINENO[0]}" 'toupper($1) ~ /^HTTP\// {s=$2} END {if (s) print l, s}' \
    "$headers" >> "$STATUSES"
  rm -f "$headers"
  return $rc
}
__wait_for() { # URL PID: until the URL answers, while the process lives
  for _ in $(seq 1 300); do
    command curl -s -o /dev/null "$1" && return 0
    kill -0 "$2" 2>/dev/null || { echo "it exited before answering at $1" >&2; return 1; }
    sleep 0.1
  done
  echo "nothing answers at $1" >&2; return 1
}
__stop() { # the process group whose leader's pid is in file $1
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  [ -n "$pid" ] || return 0
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 -- "-$pid" 2>/dev/null || { rm -f "$1"; return 0; }; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$1"
}
__stop_all() { __stop "$WORK/node.pid"; __stop "$WORK/hub.pid"; }
__serve() {
  __stop "$WORK/node.pid"
  setsid "$@" --host 127.0.0.1 --port "$PORT" >> "$WORK/node.log" 2>&1 &
  echo $! > "$WORK/node.pid"
  __wait_for "http://127.0.0.1:$PORT/mds/v1/nodes?ping=true" "$!"
}
__hub() {
  __stop "$WORK/hub.pid"
  setsid "$@" --host 127.0.0.1 --port "$HUB_PORT" >> "$WORK/hub.log" 2>&1 &
  echo $! > "$WORK/hub.pid"
  __wait_for "http://127.0.0.1:$HUB_PORT/" "$!"
}
npx() { # "npx -y deno@2.9.6 task T" and "npx -y deno@2.9.6 run ...", as typed in the checkout
  case "$*" in
    "-y deno@2.9.6 task start"*) shift 4; __serve "$DENO" task --config "$REPO/deno.json" start "$@" ;;
    "-y deno@2.9.6 task test"*) echo "(the test suite itself: not run from inside it)" ;;
    "-y deno@2.9.6 task "*) shift 3; "$DENO" task --config "$REPO/deno.json" "$@" ;;
    "-y deno@2.9.6 "*) shift 2; "$DENO" "$@" ;;
    *) command npx "$@" ;;
  esac
}
runTs() { # the SDK as a program beside the checkout imports it (by its package name)
  "$DENO" run --no-prompt --config "$REPO/deno.json" --allow-net --allow-env --allow-read "$1"
}
edgenode() {
  case "${1:-}" in
    serve) shift; __serve "$(command -v edgenode)" serve "$@" ;;
    hub) shift; __hub "$(command -v edgenode)" hub "$@" ;;
    *) command edgenode "$@" ;;
  esac
}
cd "$WORK/cwd"
