#!/usr/bin/env bash
# The main job on the embedded default: install what is missing, start (or reuse) the embedded
# servers, ingest the bundled samples and answer a sample question with its sources.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
exec "$ROOT/.venv/bin/keel" demo "$@"
