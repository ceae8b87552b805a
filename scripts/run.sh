#!/usr/bin/env bash
# `make run`: start the embedded stack, index a repository (this one by default), show queries.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
REPO_DIR=${REPO_DIR:-.}

$BIN/patchstream up &
UP_PID=$!
trap 'kill -TERM $UP_PID 2>/dev/null; wait $UP_PID 2>/dev/null || true' EXIT INT TERM

for _ in $(seq 1 180); do
  if $BIN/patchstream status --quiet; then break; fi
  if ! kill -0 $UP_PID 2>/dev/null; then echo "patchstream up exited" >&2; exit 1; fi
  sleep 1
done
$BIN/patchstream status

$BIN/patchstream index "$REPO_DIR"
NAME=$(basename "$(cd "$REPO_DIR" && pwd)")
echo
echo "Try a query:"
echo "  $BIN/patchstream query search 'apply a file delta to the graph' --repo $NAME"
$BIN/patchstream query search 'apply a file delta to the graph' --repo "$NAME" --limit 5
echo "  $BIN/patchstream query callers diff_states --depth 2"
$BIN/patchstream query callers diff_states --depth 2 || true
echo
echo "The stack keeps running; agents can emit writes with 'patchstream emit'. Ctrl-C stops it."
wait $UP_PID || true  # Ctrl-C ends the stack; that is the normal way out
