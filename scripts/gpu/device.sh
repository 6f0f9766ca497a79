#!/usr/bin/env bash
# On the GPU machine (the device tool; carry .deps made by scripts/gpu/device-deps.sh):
# build with the machine's torch, run every test (GPU ones included) and the self-test.
# Logs and JSON go to $OUT (default: build-gpu/out).
#   scripts/gpu/device.sh            everything
#   scripts/gpu/device.sh --gpu-only only the tests and self-test entries that need the GPU
#   scripts/gpu/device.sh --build-only  only the build (into build-gpu/), for other work to follow
set -uo pipefail
cd "$(dirname "$0")/../.."
gpu_only=0
build_only=0
[[ "${1:-}" == "--gpu-only" ]] && { gpu_only=1; shift; }
[[ "${1:-}" == "--build-only" ]] && { build_only=1; shift; }
root=$PWD
out=${OUT:-$root/build-gpu/out}
mkdir -p "$out"
python=${KBV_PYTHON:-/opt/torch/.venv/bin/python3}
build=${KBV_GPU_BUILD:-$root/build-gpu}  # KBV_GPU_BUILD: a build folder elsewhere (scripts/gpu/check.sh)
{
  date -u; nvidia-smi -L; nvcc --version | tail -1; "$python" -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0))'
  ls /usr/include/sqlite3.h /usr/include/openssl/evp.h /usr/include/x86_64-linux-gnu/curl/curl.h /usr/lib/x86_64-linux-gnu/libcurl.so* /usr/include/nlohmann/json.hpp /usr/include/CLI/CLI.hpp /usr/include/fmt/format.h /usr/include/gtest/gtest.h 2>&1
  ls /usr/lib/x86_64-linux-gnu/libgtest* /usr/lib/x86_64-linux-gnu/cmake/GTest 2>&1 | head -5
} > "$out/env.txt" 2>&1
# Link names for the libraries whose -dev packages are missing here.
mkdir -p .deps/usr/lib
for lib in libsqlite3.so.0:libsqlite3.so libcrypto.so.3:libcrypto.so libcurl.so.4:libcurl.so libseccomp.so.2:libseccomp.so; do
  src=/usr/lib/x86_64-linux-gnu/${lib%%:*}
  [[ -e /usr/lib/x86_64-linux-gnu/${lib##*:} || ! -e $src ]] || ln -sf "$src" ".deps/usr/lib/${lib##*:}"
done
gtest_args=()
if ! ls /usr/lib/x86_64-linux-gnu/libgtest.a /usr/lib/x86_64-linux-gnu/libgtest.so >/dev/null 2>&1; then
  mkdir -p .deps/usr/lib && cp .deps/gtest/*.a .deps/usr/lib/
fi
cmake -S . -B "$build" -G Ninja -DKBV_PYTHON="$python" -DCMAKE_PREFIX_PATH="$root/.deps/usr" \
  -DCMAKE_CXX_FLAGS="-idirafter $root/.deps/usr/include" "${gtest_args[@]}" > "$out/build.log" 2>&1 &&
  ninja -C "$build" >> "$out/build.log" 2>&1
rc=$?
tail -30 "$out/build.log"
[[ $rc -eq 0 ]] || { echo "device: build failed"; exit 1; }
((build_only)) && exit 0
export KBV_CACHE_DIR=$build/test-cache
filter=()
selftest_args=()
((gpu_only)) && filter=(-R 'cuda_|Gpu\.') && selftest_args=(--device cuda --trials 2)
(cd "$build" && ctest --output-on-failure -j 8 --timeout 900 "${filter[@]}" "$@" > "$out/ctest.log" 2>&1)
echo "ctest rc=$?"; grep -E "tests passed|Failed|Skipped|\(Failed\)|Not Run" "$out/ctest.log" | tail -30
timeout "${KBV_SELFTEST_TIMEOUT:-200}" "$build/kbv" selftest "${selftest_args[@]}" --timeout-call 20 --json "$out/selftest.json" > "$out/selftest.txt" 2>&1
echo "selftest rc=$?"; tail -25 "$out/selftest.txt"
