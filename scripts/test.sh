#!/usr/bin/env bash
# The test command (README, .ci/run): install what is missing, then run every test on the real
# parts (embedded Redis Stack, nx-27017 Mongo-wire server, SmolLM2 on llama.cpp) and the fakes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
# Under CI the property tests draw the same examples on every run: one commit, one verdict.
if [[ -n "${CI:-}" ]]; then
    export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
fi
exec .venv/bin/python -m pytest "$@"
