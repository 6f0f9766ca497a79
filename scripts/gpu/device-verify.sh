#!/usr/bin/env bash
# GPU verification in stages, for the device tool's short calls (each stage's logs and JSON under
# $OUT/<stage>/). A stage that needs the build runs `build` first when build-gpu/kbv is missing.
#   scripts/gpu/device-verify.sh build prebuild memory      one call
#   scripts/gpu/device-verify.sh timing-tests bf16           the next (the machine still warm)
# Stages:
#   build         cmake + ninja into build-gpu/ (scripts/gpu/device.sh --build-only)
#   prebuild      every CUDA example (and tests/data candidate) compiled into the test cache at once (16 cores), so the
#                 GPU tests and the self-test that follow find them built (KBV_PREBUILD: an
#                 extended regex of the paths to build, default all)
#   memory        bench/memory.sh (the measured memory table) with KBV_CUPTI_DEBUG=1
#   memory-tests  the MemoryGpu.* tests, one at a time
#   timing-tests  the TimingGpu.* tests, one at a time (KBV_TIMING_FILTER: another gtest filter)
#   attacks       issue 25's GPU attack entries of the corpus (cuda_*plt_clock, cuda_*skip_after_checks),
#                 one at a time (KBV_ATTACKS_FILTER: another gtest filter); all must be rejected
#   t17           the T17 e2e tests on the CPU device and a plain CPU timing test, with the host's
#                 facts, worker logs and dmesg (KBV_T17_FILTER: another gtest filter)
#   clocks        the SM clock spread over honest timed runs (scripts/gpu/clock_spread.py)
#   two-gpu       kbv eval --run over GPUs 0,1 against GPU 0 alone (scripts/gpu/two_gpu.py);
#                 "skipped: 1 GPU" where nvidia-smi shows fewer than two
#   sandbox       scripts/gpu/sandbox.sh: CUDA under --sandbox strict/off, IPC probes, Sandbox.* on cuda (issue 24)
#   compile       scripts/gpu/compile.sh KBV_COMPILE_LIMIT (6): --fast-build off/on on CUDA sources (issue 27)
#   bf16          the bf16 CUDA examples (GEMM, RMSNorm) at --precision bf16
#   partial       issue 29: bench/partial_audit.py --device cuda, the honest partial replacements and the fallback
#                 cheats of L2/12 (examples/level2/12_Gemm_Multiply_LeakyReLU/cuda_*) built in parallel first, then
#                 evaluated at KBV_PARTIAL_SIZES (default S,L: in_features 512 and the suite's 8192; M, XL: 2048, 32768)
#   prebuild-bg   prebuild in the background (CPU work), for GPU stages that need no build;
#   prebuild-wait waits for it
#   selftest      kbv selftest --device cuda (the CUDA confusion matrix), timing off
#   main          scripts/main.sh on the GPU (the README's first command; KBV_MAIN_TIMEOUT, 1500 s)
#   lint-cuda     kbv lint-problems problems --device cuda --jobs 1 (bounded by KBV_LINT_TIMEOUT)
#   suite-times   bench/suite_times.py (TF32 and FP32 reference times of every problem;
#                 KBV_SUITE_ARGS, e.g. "--skip REGEX --budget 1")
#   probe         bench/gpu_probe.py (pure torch: placement, process, launch and drift effects on one
#                 memory-bound call; KBV_PROBE_ARGS)
#   warm           bench/bench.py warm on this host's idle CPUs (issue 26; KBV_WARM_ARGS, default --limit 6 --samples 2 --repeats 2)
#   aa|aa_diag|repeat|overhead|side_stream|protocol|tf32   bench/bench.py's timing benchmarks (KBV_BENCH_ARGS;
#                 protocol after aa in one chain takes kbv's timing walls from the A/A records)
# KBV_STAGE_TIMEOUT (seconds, default 540) bounds each command of a stage (aa: KBV_AA_TIMEOUT, 1500;
# a cut-off aa is summarised from the records it stored). More than 8 files under
# $OUT at the end (the device tool returns 8) are packed into $OUT/all.tgz.
#
# Longer than one call (10 minutes): `detach STAGES...` runs the stages in their own process
# session, which outlives the call (the machine stays held while calls follow each other), with
# their logs under KBV_VERIFY_DIR (default /tmp/kbv-verify); it then follows them like `wait`.
# `wait SECONDS` prints the driver's new log lines for at most SECONDS (less if the stages end) and
# packs what they wrote so far into $OUT/all.tgz. A stage running when the machine goes back is lost.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-$root/build-gpu/out}
python=${KBV_PYTHON:-/opt/torch/.venv/bin/python3}
export KBV_PYTHON=$python
export KBV_E2E_KEEP=1  # the e2e tests keep their scratch folders: keep_scratch brings them back
build=${KBV_GPU_BUILD:-$root/build-gpu}  # KBV_GPU_BUILD: a build folder elsewhere (scripts/gpu/check.sh)
cache=$build/test-cache  # the tests' KBV_TEST_CACHE
limit=${KBV_STAGE_TIMEOUT:-540}
vdir=${KBV_VERIFY_DIR:-/tmp/kbv-verify}
if [[ ${1:-} == detach ]]; then
  shift
  rm -rf "$vdir" && mkdir -p "$vdir/out"
  KBV_DETACHED=1 OUT=$vdir/out setsid nohup "$root/scripts/gpu/device-verify.sh" "$@" > "$vdir/driver.log" 2>&1 < /dev/null &
  echo "device-verify: detached $* (pid $!), logs in $vdir"
  set -- wait "${KBV_WAIT:-560}"
fi
if [[ ${1:-} == wait ]]; then
  end=$((SECONDS + ${2:-560})) seen=0
  while :; do
    n=$({ wc -l < "$vdir/driver.log"; } 2>/dev/null || echo 0)
    ((n > seen)) && sed -n "$((seen + 1)),${n}p" "$vdir/driver.log" && seen=$n
    [[ -e $vdir/done ]] && { echo "device-verify: all stages done"; break; }
    if ((SECONDS >= end)); then
      # Where the running stage is: the last lines of the log written most recently.
      latest=$(find "$vdir/out" -name '*.log' -newer "$vdir/driver.log" -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -1 | cut -d' ' -f2-)
      [[ -n $latest ]] && { echo "device-verify: ${latest#$vdir/out/}:"; tail -3 "$latest"; }
      echo "device-verify: still running"
      break
    fi
    sleep 3
  done
  mkdir -p "$out" && tar czf "$out/all.tgz" -C "$vdir" . 2>/dev/null
  exit 0
fi
mkdir -p "$out"

say() { echo "[$(date -u +%T)] $*"; }

gtest_one_by_one() {  # $1: stage dir, $2: gtest filter of the suite
  local dir=$1 suite=$2 t
  for t in $("$build/tests/kbv_e2e_tests" --gtest_list_tests --gtest_filter="$suite" | awk '/^[^ ]/{s=$1} /^  /{print s $1}'); do
    local t0=$SECONDS log="$dir/${t//\//_}.log"  # parameterised names hold '/'
    timeout "$limit" "$build/tests/kbv_e2e_tests" --gtest_filter="$t" > "$log" 2>&1
    local rc=$?
    say "$t rc=$rc $((SECONDS - t0))s"
    [[ $rc -eq 0 ]] || grep -E "Failure|Expected|Which is|actual|error" "$log" | head -8
    keep_scratch "$dir/scratch/$t"
  done
}

# The e2e tests' scratch folders (TMP/kbv-e2e-<suite>-<pid>/): their records, worker logs and
# small files go to $1 (for the clock data and a failure's cause), then the folders are removed.
keep_scratch() {
  local to=$1 tmp=${TMPDIR:-/tmp}
  local list; list=$(cd "$tmp" && find kbv-e2e-* -type f -size -2M \( -name '*.json' -o -name '*.log' -o -name 'heartbeat*' \) 2>/dev/null)
  if [[ -n $list ]]; then mkdir -p "$to" && (cd "$tmp" && tar cf - $list) | tar xf - -C "$to"; fi
  rm -rf "$tmp"/kbv-e2e-*
}

# What the host is: for a failure that only the GPU machine shows.
host_facts() {
  echo "== date"; date -u; echo "== uname"; uname -a; echo "== id"; id; echo "== nproc"; nproc
  echo "== pid_max / threads-max"; cat /proc/sys/kernel/pid_max /proc/sys/kernel/threads-max
  echo "== ulimit -a"; ulimit -a; echo "== cgroup"; cat /proc/self/cgroup
  local cg; cg=/sys/fs/cgroup$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup)
  for f in pids.max pids.current memory.max memory.current; do [[ -r $cg/$f ]] && echo "$cg/$f: $(cat "$cg/$f")"; done
  echo "== free -m"; free -m; echo "== processes"; ps -e --no-headers | wc -l
  echo "== pid 1"; tr '\0' ' ' < /proc/1/cmdline; echo; echo "== this shell's ancestry"
  local p=$$; while [[ $p -gt 1 ]]; do echo "$p $(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-120)"; p=$(awk '{print $4}' /proc/$p/stat); done
  echo "== subreaper/no_new_privs of this shell"; grep -E "NoNewPrivs|Seccomp" /proc/$$/status
}

stage() {
  local name=$1 dir=$out/$1
  mkdir -p "$dir"
  if [[ $name != build && $name != probe && ! -x $build/kbv ]]; then stage build || return 1; fi
  say "stage $name"
  local t0=$SECONDS
  case $name in
    build)
      OUT=$dir scripts/gpu/device.sh --build-only > "$dir/stdout.log" 2>&1 || { tail -20 "$dir/stdout.log"; return 1; } ;;
    prebuild-bg)
      (stage prebuild > "$dir/stdout.log" 2>&1; touch "$dir/finished") & ;;
    prebuild-wait)
      while [[ ! -e $out/prebuild-bg/finished ]]; do sleep 2; done
      cat "$out/prebuild-bg/stdout.log" ;;
    prebuild)
      find examples tests/data -name 'cuda_*.py' | grep -E "${KBV_PREBUILD:-.}" | sort | xargs -P 12 -I{} sh -c \
        'timeout '"$limit"' "$0" build --solution "$1" --device cuda --cache-dir "$2" > "$3/$(echo "$1" | tr / _).log" 2>&1 || echo "prebuild failed: $1"' \
        "$build/kbv" {} "$cache" "$dir" ;;
    memory)
      KBV_CUPTI_DEBUG=1 KBV_CACHE_DIR=$cache OUT=$dir KBV=$build/kbv timeout "$limit" bench/memory.sh > "$dir/stdout.log" 2>&1
      tail -30 "$dir/stdout.log"
      grep -rh "kbv cupti:" "$cache" 2>/dev/null | sort | uniq -c | sort -rn | head -40 > "$dir/cupti-launches.txt" ;;
    memory-tests) gtest_one_by_one "$dir" 'MemoryGpu.*' ;;
    timing-tests) gtest_one_by_one "$dir" "${KBV_TIMING_FILTER:-TimingGpu.*}" ;;
    attacks)
      # Issue 25's GPU attacks from the corpus (a rewritten event/host clock, skipping work after the
      # spot-checked calls), each under strict and lenient: all must be rejected.
      gtest_one_by_one "$dir" "${KBV_ATTACKS_FILTER:-Examples/Corpus.VerdictAsExpected/cuda_*_plt_clock*:Examples/Corpus.VerdictAsExpected/cuda_*_skip_after_checks*}" ;;
    t17)
      # The T17 e2e tests (CPU device) and a plain CPU timing test, with the host's facts, the
      # records, the worker logs and the kernel's log around them.
      # A worker that crashes leaves a core (here only): its backtrace is kept, the core is not.
      host_facts > "$dir/host.txt" 2>&1
      local pattern; pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
      echo "$dir/core.%p" > /proc/sys/kernel/core_pattern 2>/dev/null
      ( ulimit -c unlimited
        gtest_one_by_one "$dir" "${KBV_T17_FILTER:-Timing.TheBaseline*:Timing.AProcess*:Timing.CpuHonestRecordCarriesTimingFields}" )
      [[ -n $pattern ]] && echo "$pattern" > /proc/sys/kernel/core_pattern 2>/dev/null
      dmesg 2>&1 | tail -60 > "$dir/dmesg.txt"
      local core n=0
      for core in "$dir"/core.*; do
        [[ -e $core ]] || continue
        ((n++ < 2)) && cuda-gdb -batch -ex 'bt 40' -ex 'info registers rip r8 rdx' -ex 'x/12i $pc-24' \
          "$python" "$core" > "$core.bt.txt" 2>&1 && say "backtrace of $(basename "$core"):" && grep -E "^#" "$core.bt.txt" | head -25
        rm -f "$core"
      done ;;
    clocks)
      # The SM clock over honest timed runs (the NVML throttle rule's threshold, docs/TIMING.md):
      # the reference as its own candidate on compute- and memory-bound problems, sampled for
      # KBV_CLOCK_TIME_CAP seconds each (default 3, RSE target 1e-6 so the cap decides), with
      # nvidia-smi read every 100 ms beside them; then the clocks of every record of this chain.
      nvidia-smi --query-gpu=timestamp,utilization.gpu,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
        --format=csv -lms 100 > "$dir/nvidia-smi.csv" 2>&1 &
      local smi=$!
      OUT=$dir timeout "$limit" "$python" bench/bench.py aa --kbv "$build/kbv" --cache-dir "$dir/cache" \
        --problems-list "${KBV_CLOCK_PROBLEMS:-1_Square_matrix_multiplication_,123_Conv2d,139_Causal_attention,26_GELU_}" \
        --repeats "${KBV_CLOCK_REPEATS:-2}" --time-cap "${KBV_CLOCK_TIME_CAP:-3}" --rse 1e-6 \
        > "$dir/stdout.log" 2> "$dir/stderr.log"
      say "bench aa (clocks) rc=$?"
      kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
      rm -rf "$dir/cache"
      "$python" scripts/gpu/clock_spread.py --smi "$dir/nvidia-smi.csv" --json "$dir/clock_spread.json" "$out" \
        > "$dir/clock_spread.txt" 2>&1
      say "clock_spread rc=$?"; tail -25 "$dir/clock_spread.txt" ;;
    two-gpu)
      # kbv eval --run over two GPUs (scripts/gpu/two_gpu.py): only where nvidia-smi shows two.
      local n; n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
      if ((n < 2)); then
        say "two-gpu: skipped: $n GPU"; echo "skipped: $n GPU" > "$dir/skipped.txt"
      else
        timeout "${KBV_TWO_GPU_TIMEOUT:-1500}" "$python" scripts/gpu/two_gpu.py --kbv "$build/kbv" --work "$dir/work" \
          --json "$dir/two_gpu.json" ${KBV_TWO_GPU_ARGS:-} > "$dir/stdout.log" 2>&1
        say "two-gpu rc=$?"; tail -30 "$dir/stdout.log"
        find "$dir/work" -name '*.so' -delete 2>/dev/null
      fi ;;
    sandbox)
      # Issue 24: does the sandbox leave CUDA working (scripts/gpu/sandbox.sh): strict, off, the
      # IPC probes and the Sandbox.* e2e tests with the attack candidates on the GPU.
      KBV_BUILD_DIR=$build OUT=$dir timeout "${KBV_SANDBOX_TIMEOUT:-900}" scripts/gpu/sandbox.sh > "$dir/stdout.log" 2>&1
      say "sandbox rc=$?"; tail -60 "$dir/stdout.log" ;;
    compile)
      # Issue 27: --fast-build off against on over KBV_COMPILE_LIMIT CUDA sources (scripts/gpu/compile.sh).
      KBV_GPU_BUILD=$build OUT=$dir timeout "${KBV_COMPILE_TIMEOUT:-900}" scripts/gpu/compile.sh "${KBV_COMPILE_LIMIT:-6}" \
        > "$dir/stdout.log" 2>&1
      say "compile rc=$?"; tail -40 "$dir/stdout.log"; rm -rf "$dir/cache" ;;
    bf16)
      for c in "problems/level1/1_Square_matrix_multiplication_.py|examples/level1/1_Square_matrix_multiplication_/cuda_bf16.py" \
               "problems/level1/115_RMSNorm.py|examples/level1/115_RMSNorm/cuda_bf16.py"; do
        IFS='|' read -r problem solution <<<"$c"
        local n; n=$(basename "$(dirname "$solution")")
        timeout "$limit" "$build/kbv" eval --problem "$problem" --solution "$solution" --device cuda --precision bf16 \
          --cache-dir "$cache" --json "$dir/$n.json" > "$dir/$n.log" 2>&1
        say "$n rc=$?"; tail -12 "$dir/$n.log"
      done ;;
    partial)
      # Issue 29: does the GPU audit pass honest partial replacements and reject the fallbacks, at several sizes.
      find examples/level2/12_Gemm_Multiply_LeakyReLU -name 'cuda_*.py' | sort | xargs -P 8 -I{} sh -c \
        'timeout '"$limit"' "$0" build --solution "$1" --device cuda --cache-dir "$2" > "$3/$(basename "$1" .py).build.log" 2>&1 || echo "partial: build failed: $1"' \
        "$build/kbv" {} "$cache" "$dir"
      timeout "$limit" "$python" bench/partial_audit.py --device cuda --kbv "$build/kbv" --cache-dir "$cache" --out "$dir/records" \
        --sizes "${KBV_PARTIAL_SIZES:-S,L}" ${KBV_PARTIAL_ARGS:-} > "$dir/table.md" 2> "$dir/stderr.log"
      say "partial_audit rc=$?"; cat "$dir/table.md"; tail -5 "$dir/stderr.log" ;;
    verified)
      # Issue 29: the KernelBench-Verified protocol on the GPU (upstream's loop: 5 standard draws,
      # the hidden configs, 1e-3, mean timing without a flush) for CUDA examples.
      for c in ${KBV_VERIFIED_EXAMPLES:-level1/19_ReLU level1/1_Square_matrix_multiplication_}; do
        local n; n=$(basename "$c")
        timeout "$limit" "$build/kbv" eval --problem "problems/$c.py" --solution "examples/$c/cuda_honest.py" --device cuda \
          --protocol kernelbench-verified --cache-dir "$cache" --json "$dir/$n.json" > "$dir/$n.log" 2>&1
        say "verified $n rc=$?"; tail -12 "$dir/$n.log"
      done ;;
    selftest)
      timeout "$limit" "$build/kbv" selftest --device cuda --trials 1 --timing off --cache-dir "$cache" \
        --json "$dir/selftest.json" > "$dir/selftest.txt" 2>&1
      say "selftest rc=$?"; tail -40 "$dir/selftest.txt" ;;
    main)
      KBV_SKIP_SETUP=1 KBV_BUILD_DIR=$build KBV_DEVICE=cuda KBV_CACHE_DIR=$cache \
        timeout "${KBV_MAIN_TIMEOUT:-1500}" scripts/main.sh > "$dir/stdout.log" 2>&1
      say "main rc=$?"; tail -45 "$dir/stdout.log"; cp "$build/selftest.json" "$dir/" 2>/dev/null ;;
    lint-cuda)
      timeout "${KBV_LINT_TIMEOUT:-$limit}" "$build/kbv" lint-problems problems --device cuda --jobs 1 --cache-dir "$cache" \
        --json "$dir/lint.json" > "$dir/stdout.log" 2>&1
      say "lint-problems rc=$?"; tail -30 "$dir/stdout.log" ;;
    suite-times)
      timeout "$limit" "$python" bench/suite_times.py --json "$dir/suite_times.json" ${KBV_SUITE_ARGS:-} > "$dir/stdout.log" 2>&1
      say "suite_times rc=$?"; tail -5 "$dir/stdout.log" ;;
    probe)
      timeout "$limit" "$python" bench/gpu_probe.py --json "$dir/gpu_probe.json" ${KBV_PROBE_ARGS:-} \
        > "$dir/stdout.log" 2> "$dir/stderr.log"
      say "gpu_probe rc=$?"; cat "$dir/stderr.log" | tail -12 ;;
    warm)  # issue 26: warm workers where cores are idle (this host's CPUs; CPU examples, 6 problems)
      OUT=$dir timeout "$limit" "$python" bench/bench.py warm --kbv "$build/kbv" --cache-dir "$cache" \
        ${KBV_WARM_ARGS:---limit 6 --samples 2 --repeats 2} > "$dir/stdout.log" 2> "$dir/stderr.log"
      say "bench warm rc=$?"; tail -30 "$dir/stdout.log"; tail -5 "$dir/stderr.log" ;;
    throughput)  # issue 26: candidates per hour through kbv serve: CUDA examples on the GPU (one host), then
      # CPU examples on 1, 2, 4 kbv worker processes (the scaling part, on this host's cores)
      # (an architecture list, so that serve's builders compile CUDA without the GPU: docs/SERVICE.md)
      # KBV_THROUGHPUT_PARTS picks the parts (default "cpu": the scaling over 1, 2, 4 workers, 13 min on
      # an H100 host's 16 cores, docs/results/2026-12-07-scaling-gpu-host.md; "cpu cuda" adds the CUDA part). On an H100 host (2026-12-06)
      # the CUDA part's warm-up and serial passes alone took 15 min (a fresh CUDA build is 44-49 s
      # there), and the CPU part's one-host passes 8.6 min before its scaling: the CPU part now runs
      # the warm-up and the scaling only (--build-jobs-list none).
      local part
      for part in ${KBV_THROUGHPUT_PARTS:-cpu}; do
        case $part in
          cuda) OUT=$dir/cuda TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} timeout "${KBV_THROUGHPUT_TIMEOUT:-900}" "$python" \
                  bench/bench.py throughput --kbv "$build/kbv" --device cuda \
                  ${KBV_THROUGHPUT_CUDA_ARGS:---limit 2 --samples 1 --build-jobs-list 4 --workers-list 0} > "$dir/cuda.log" 2>&1
                say "bench throughput cuda rc=$?"; tail -25 "$dir/cuda.log" ;;
          cpu) OUT=$dir/cpu timeout "${KBV_THROUGHPUT_TIMEOUT:-900}" "$python" bench/bench.py throughput --kbv "$build/kbv" --device cpu \
                 ${KBV_THROUGHPUT_CPU_ARGS:---limit 2 --samples 2 --workers-list 1,2,4 --build-jobs-list none} > "$dir/cpu.log" 2>&1
               say "bench throughput cpu rc=$?"; tail -25 "$dir/cpu.log" ;;
          *) say "throughput: unknown part '$part' (cpu, cuda)" ;;
        esac
      done ;;
    aa|aa_diag|repeat|overhead|side_stream|protocol|tf32)
      local extra=()  # protocol after aa in the same chain: kbv's side from the A/A records
      [[ $name == protocol && -e $out/aa/aa.json ]] && extra=(--from-aa "$out/aa/aa.json")
      # The full A/A takes about 18 minutes: its own limit (KBV_AA_TIMEOUT, 1500 s; run it detached).
      local lim=$limit rc
      [[ $name == aa ]] && lim=${KBV_AA_TIMEOUT:-1500}
      # issue 28: the A/A in paired rounds (KBV_AA_PAIRS=0: unpaired, as before 2026-12-06)
      [[ $name == aa ]] && extra+=(--timing-pairs "${KBV_AA_PAIRS:-6}")
      OUT=$dir timeout "$lim" "$python" bench/bench.py "$name" --kbv "$build/kbv" --cache-dir "$cache" ${KBV_BENCH_ARGS:-} "${extra[@]}" \
        > "$dir/stdout.log" 2> "$dir/stderr.log"
      rc=$?
      say "bench $name rc=$rc"
      if [[ $name == aa && $rc -ne 0 && -d $dir/aa/run ]]; then  # cut off: summarise what was stored
        OUT=$dir "$python" bench/bench.py aa --kbv "$build/kbv" --collect ${KBV_BENCH_ARGS:-} > "$dir/stdout.log" 2>> "$dir/stderr.log"
        say "bench aa --collect rc=$? (the records stored before the cut)"
      fi
      tail -30 "$dir/stdout.log"; tail -5 "$dir/stderr.log" ;;
    *) echo "device-verify: unknown stage '$name'"; return 2 ;;
  esac
  say "stage $name done in $((SECONDS - t0))s"
}

[[ $# -gt 0 ]] || { sed -n 2,20p "$0"; exit 2; }
{ date -u; nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv 2>&1; } > "$out/device.txt"
for s in "$@"; do stage "$s"; done
[[ -n ${KBV_DETACHED:-} ]] && { say "done"; touch "$vdir/done"; exit 0; }
# The device tool brings back at most 8 files: more than that are packed into one all.tgz.
if [[ $(find "$out" -type f | wc -l) -gt 8 ]]; then
  tar czf "/tmp/kbv-device-out.tgz" -C "$out" . && find "$out" -mindepth 1 -delete && mv /tmp/kbv-device-out.tgz "$out/all.tgz"
  say "packed the logs into $out/all.tgz"
fi
