#!/usr/bin/env bash
# Render game-day reports and open each in headless Chromium (Debian's
# `chromium`): a screenshot must be written and the browser's console must
# stay silent (no script error, no Content-Security-Policy violation: the
# report runs no script and its one style element is allowed by hash).
# Reports: the gameday fixtures (an alarm-stopped run, a killed and
# recovered run, a run the preflight refused, a run whose guard was lost
# and rolled back, a journal of hostile strings) and a real run of
# docs/drills/openai-outage.yaml against a sandbox. Usage:
#   tools/report-check.sh BIN OUTDIR
set -euo pipefail
bin=$1 out=$2
mkdir -p "$out"
tmp=$(mktemp -d)
pid=
trap 'test -z "$pid" || { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }; rm -rf "$tmp"' EXIT

# The real run: a sandbox on a throwaway local context.
export KOSHACTL_STATE_DIR="$tmp/state" KOSHACTL_CONFIG="$tmp/config.yaml" KOSHACTL_CONTEXT=
"$bin" sandbox --listen 127.0.0.1:0 --addr-file "$tmp/url" --time-scale 20 --profile instant --chaos >"$tmp/sandbox.log" 2>&1 & pid=$!
for _ in $(seq 150); do test -s "$tmp/url" && break; sleep 0.1; done
test -s "$tmp/url" || { echo "report-check: the sandbox did not start"; cat "$tmp/sandbox.log"; exit 1; }
SANDBOX_URL=$(cat "$tmp/url") "$bin" drill run docs/drills/openai-outage.yaml --journal "$out/openai-outage.journal.json" \
  --report "$out/openai-outage.html" >"$out/openai-outage.log" 2>&1 || { echo "report-check: the example drill failed"; cat "$out/openai-outage.log"; exit 1; }
kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=

for name in stopped killed refused guard-lost hostile; do
  "$bin" drill report "internal/gameday/testdata/$name.journal.json" --no-fetch --out "$out/$name.html" 2>/dev/null
done

fail=0
for page in "$out"/*.html; do
  name=$(basename "$page" .html)
  bad=0
  # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
  flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --window-size=1280,1800
    --enable-logging=stderr --v=0)
  chromium "${flags[@]}" --screenshot="$out/$name.png" "file://$(realpath "$page")" >/dev/null 2>"$out/$name.chromium.log" || {
    echo "report-check: $name: chromium failed"; cat "$out/$name.chromium.log"; fail=1; continue; }
  chromium "${flags[@]}" --dump-dom "file://$(realpath "$page")" >"$out/$name.dom.txt" 2>>"$out/$name.chromium.log"
  # Every console message is a failure: the report logs nothing when it works.
  if grep -E ':CONSOLE|Uncaught|Refused to|Content Security Policy' "$out/$name.chromium.log"; then
    echo "report-check: $name: the browser's console reported the lines above"; bad=1
  fi
  size=$(stat -c %s "$out/$name.png" 2>/dev/null || echo 0)
  if [ "$size" -lt 20000 ]; then echo "report-check: $name: screenshot of $size bytes: the page did not render"; bad=1; fi
  # The DOM as the browser built it: the timeline is there, no script came in.
  grep -q '<svg' "$out/$name.dom.txt" && grep -q 'id="glance"' "$out/$name.dom.txt" ||
    { echo "report-check: $name: the rendered DOM lacks the timeline or the summary"; bad=1; }
  # A refused run and a lost guard show the guard's record at the top.
  case $name in refused|guard-lost)
    grep -q 'id="guard"' "$out/$name.dom.txt" || { echo "report-check: $name: the rendered DOM lacks the guard's record"; bad=1; } ;;
  esac
  if grep -qiE '<(script|img|iframe)[ >]' "$out/$name.dom.txt"; then
    echo "report-check: $name: the rendered DOM holds a script, image or frame element"; bad=1
  fi
  if [ "$bad" -eq 0 ]; then echo "report-check: $name: rendered ($size-byte screenshot), console silent"; else fail=1; fi
done
exit $fail
