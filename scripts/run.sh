#!/usr/bin/env bash
# `make run`: start the embedded stack, index a repository (this one by default), show queries.
# Ctrl-C stops the stack and ends the script with status 0 (make itself then reports the
# interrupt the way it always does: it re-raises SIGINT, status 130, with no error line).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
REPO_DIR=${REPO_DIR:-.}

$BIN/patchstream up &
UP_PID=$!
WATCH_PID=
stop() {
  trap - INT TERM
  echo
  echo "stopping the stack ..."
  if [ -n "$WATCH_PID" ]; then kill -TERM "$WATCH_PID" 2>/dev/null || true; fi
  kill -TERM "$UP_PID" 2>/dev/null || true
  if [ -n "$WATCH_PID" ]; then wait "$WATCH_PID" 2>/dev/null || true; fi
  wait "$UP_PID" 2>/dev/null || true
  exit 0
}
trap stop INT TERM
trap 'kill -TERM $UP_PID ${WATCH_PID:-} 2>/dev/null || true' EXIT

for _ in $(seq 1 180); do
  if $BIN/patchstream status --quiet; then break; fi
  if ! kill -0 $UP_PID 2>/dev/null; then echo "patchstream up exited" >&2; exit 1; fi
  sleep 1
done
$BIN/patchstream status

$BIN/patchstream index "$REPO_DIR"
NAME=$(basename "$(cd "$REPO_DIR" && pwd)")
show() {  # a command, then the first five lines of its answer
  echo
  echo "\$ $(printf '%q ' "$@")"
  "$@" 2>&1 | head -n 5 || true
}
show $BIN/patchstream query search 'apply a file delta to the graph' --repo "$NAME" --limit 5
show $BIN/patchstream query callers diff_states --repo "$NAME"
echo
echo "More: --limit, --depth 2, --json on every query command; 'patchstream --help' lists them."
# Every file written in the repository from now on, by an agent or an editor, is published.
$BIN/patchstream watch "$REPO_DIR" --repo "$NAME" &
WATCH_PID=$!
echo "The stack keeps running and watches $REPO_DIR: edit a file and query again. Ctrl-C stops it."
wait "$UP_PID" || true
