#!/usr/bin/env bash
# Source lines a command: the physical lines (wc -l, comments and blank lines
# included) of the non-test Go files git tracks, outside the data plane
# (internal/dataplane), test support (internal/testutil, packages named
# *test such as drilltest or levertest, testdata programs) and fakes (packages
# named *fake such as cwfake or snsfake), divided by the files that declare a
# command (`func NewCmd`). Issue 42 asks for at most 1,050.
# Usage: tools/loc.sh (from the repository root).
set -euo pipefail
files=$(git ls-files '*.go' | grep -v '_test\.go$' |
  grep -Ev '^internal/(dataplane|testutil)/|/testdata/|/[a-z0-9]+(test|fake)/')
lines=$(echo "$files" | xargs cat | wc -l)
cmds=$(git ls-files '*.go' | grep -v '_test\.go$' | xargs grep -l '^func NewCmd' | wc -l)
echo "$lines lines in $(echo "$files" | wc -l) files / $cmds commands = $((lines / cmds)) lines a command"
