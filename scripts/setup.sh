#!/usr/bin/env bash
# Sets up whatever is missing, then builds kbv into build/.
#   - system packages (Debian/Ubuntu, when run as root): compilers, CMake, Ninja, GoogleTest and the
#     -dev packages kbv links (nlohmann-json, CLI11, fmt, SQLite, OpenSSL, libcurl, libseccomp, cpp-httplib)
#   - a project-local Python environment .venv with torch 2.11 (requirements.txt), unless
#     KBV_PYTHON names an interpreter that already has torch 2.11 (the GPU machine's)
#   - cmake + ninja
# Idempotent: a second run only rebuilds what changed.
# Arguments are the ninja targets to build (default: all of them, test binaries included);
# scripts/main.sh asks for kbv and kbv_worker only. Build progress is shown; apt is kept quiet
# (its output is shown only when it fails).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
setup_start=$SECONDS
targets=("$@")

# apt-get without prompts, progress bars or debconf chatter; the output goes to a log that is
# shown only when the command fails. `apt_quiet optional ...` stays silent on failure too.
export DEBIAN_FRONTEND=noninteractive
apt_log=${TMPDIR:-/tmp}/kbv-setup-apt.log
apt_quiet() {
  local optional=
  [[ "$1" == optional ]] && { optional=1; shift; }
  if apt-get -qq -y -o Dpkg::Use-Pty=0 "$@" >>"$apt_log" 2>&1; then return 0; fi
  [[ -n "$optional" ]] || { echo "setup: apt-get $* failed; the end of $apt_log:" >&2; tail -n 20 "$apt_log" >&2; }
  return 1
}

need_pkgs=()
for pkg in g++ cmake ninja-build libgtest-dev nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev libssl-dev libcurl4-openssl-dev libcpp-httplib-dev pkg-config python3-venv; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_pkgs+=("$pkg")
done
# python3-venv is only needed when python3 cannot make a venv by itself (pyenv builds can).
if python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  need_pkgs=("${need_pkgs[@]/python3-venv}")
fi
need_pkgs=($(printf '%s\n' "${need_pkgs[@]}" | grep -v '^$' || true))
if ((${#need_pkgs[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "setup: installing ${need_pkgs[*]} (apt-get; its log: $apt_log)"
    apt_quiet update
    apt_quiet install "${need_pkgs[@]}"
  else
    echo "setup: missing system packages: ${need_pkgs[*]} (install them, or run as root)" >&2
    exit 1
  fi
fi

# Optional: libseccomp-dev, for the sandbox's seccomp layer (without it kbv builds, and --sandbox strict
# refuses to run candidates, saying so). Root + apt only; a failure (no network) is not fatal.
if ! dpkg -s libseccomp-dev >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "setup: installing libseccomp-dev and pkg-config (the sandbox's seccomp layer)"
  { apt_quiet optional update && apt_quiet optional install libseccomp-dev pkg-config; } ||
    echo "setup: libseccomp-dev could not be installed; the seccomp layer will be unavailable (--sandbox best-effort runs without it)"
fi

# Optional: libpq-dev (the job queue's PostgreSQL engine) and the PostgreSQL server (the queue's
# tests start their own on loopback, tests/queue/with_postgres.sh, and skip, saying so, without it).
# Root + apt only; a failure is not fatal.
if { ! dpkg -s libpq-dev >/dev/null 2>&1 || ! dpkg -s postgresql >/dev/null 2>&1; } && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "setup: installing libpq-dev and postgresql (the job queue's PostgreSQL engine and its tests)"
  { apt-get update -qq >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpq-dev postgresql >/dev/null 2>&1; } ||
    echo "setup: libpq-dev/postgresql could not be installed; the queue's PostgreSQL engine or its tests will be left out"
fi

# Optional: headless Chromium, for the test that opens the HTML report in a real browser (the test
# skips, saying so, without it). Root + apt only; a failure (e.g. snap-only Ubuntu) is not fatal.
if [[ -z "${KBV_NO_CHROMIUM:-}" ]] && ! command -v chromium >/dev/null && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "setup: installing chromium (optional, for the HTML report test; KBV_NO_CHROMIUM=1 skips it)"
  { apt_quiet optional update && apt_quiet optional install chromium; } ||
    echo "setup: chromium could not be installed; the HTML report test will skip"
fi

python=${KBV_PYTHON:-}
if [[ -z "$python" ]]; then
  python=$root/.venv/bin/python3
  if ! "$python" -c 'import torch, ninja, numpy, setuptools, einops; assert torch.__version__.startswith("2.11.")' >/dev/null 2>&1; then
    echo "setup: creating .venv with torch 2.11 (a few minutes the first time)"
    [[ -x "$python" ]] || python3 -m venv "$root/.venv"
    "$python" -m pip install -q --disable-pip-version-check -r requirements.txt
  fi
fi
"$python" -c 'import torch; assert torch.__version__.startswith("2.11."), torch.__version__' || {
  echo "setup: $python must have torch 2.11" >&2; exit 1; }

build=${KBV_BUILD_DIR:-$root/build}
echo "setup: configuring the build in $build"
cmake -S "$root" -B "$build" -G Ninja -DKBV_PYTHON="$python" >/dev/null
what=${targets[*]:-every target}
echo "setup: building $what (the first build takes several minutes)"
if [[ -t 1 ]]; then
  ninja -C "$build" "${targets[@]}"  # ninja's own status line on a terminal
else
  # Not a terminal (a log, CI): a line at every tenth of the steps; warnings and errors as they come.
  NINJA_STATUS='[%f/%t] ' ninja -C "$build" "${targets[@]}" | awk '
    /^\[[0-9]+\/[0-9]+\] / {
      split(substr($1, 2, length($1) - 2), a, "/"); n = a[1] + 0; t = a[2] + 0
      p = t ? int(100 * n / t) : 100
      if (p >= shown + 10 || n == t) { printf "setup: built %d of %d steps (%d%%)\n", n, t, p; fflush(); shown = p - p % 10 }
      next
    }
    /^ninja: (Entering directory|no work to do)/ { next }
    { print; fflush() }'
fi
echo "setup: kbv built in $build in $((SECONDS - setup_start)) s (workers use $python)"
