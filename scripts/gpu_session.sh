#!/usr/bin/env bash
# The GPU host's checks in one batched run: build, GPU tests, corpus, certify, mutants,
# sanitizers, SASS, benchmark; logs under $OUT, a short table last.
# Usage: scripts/gpu_session.sh [steps...]  (default: the steps above; the others at STEPS below)
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
# What $OUT held before this script (a caller's own logs, its tables): left as they are by the
# summary's packing below, which bundles and removes only what this script wrote (a caller's
# logs.tgz in the same $OUT is kept, and ours takes another name).
declare -A PREEXISTING
for f in "$OUT"/* "$OUT"/.[!.]*; do [ -e "$f" ] && PREEXISTING[$(basename "$f")]=1; done
LOGS_TGZ=logs.tgz; [ -n "${PREEXISTING[logs.tgz]:-}" ] && LOGS_TGZ=gpu_session_logs.tgz
STEPS=${*:-build tests corpus certify mutants sanitize sass bench}  # also: shards, packed, props, fuzz, bench_ab, peers, doc, profile
# Every Catch2 run given test names runs with -w NoTests: a filter that matches nothing fails
# (exit 2) instead of passing with "No tests ran" (Catch2 v2 ANDs test specs given as separate
# arguments; alternatives go comma-separated in one).
B=build/gpu
# A copy of the tree without its .git (or with an old one) names the commit it was copied from in
# .source-commit (written by the caller: git rev-parse HEAD > .source-commit; ignored by git).
if [ -z "${RMSNORM_SOURCE_COMMIT:-}" ] && [ -s .source-commit ]; then
  export RMSNORM_SOURCE_COMMIT=$(head -c 64 .source-commit | tr -dc '0-9a-f')
fi
declare -A RESULT
t0=$(date +%s)
step() { echo; echo "=== $1 ($(( $(date +%s) - t0 ))s)"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }

if has build; then
  step build
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
  # FlashInfer's headers, where carried (docs/performance.md, "The peers"): its plugin is built too.
  cmake --preset gpu $( [ -d .deps/flashinfer/include ] && echo "-DFLASHINFER_INCLUDE_DIR=$PWD/.deps/flashinfer/include" ) \
    > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build --preset gpu -j $(nproc) ${TARGETS:+--target $TARGETS} > "$OUT/build.log" 2>&1; RESULT[build]=$?
  grep -E "error|warning" "$OUT/build.log" | head -30
fi
if has tests; then
  step tests
  # Every [gpu] test: kernel tests, the property suite on the CUDA variants, corpus replay.
  ctest --test-dir $B -L gpu -E "${TESTS_EXCLUDE:-properties_mutants}" --output-on-failure -j ${CTEST_JOBS:-1} \
    --timeout ${TEST_TIMEOUT:-400} > "$OUT/ctest_gpu.log" 2>&1; RESULT[ctest_gpu]=$?
  grep -E "Test +#|tests passed|Passed|Failed|\*\*\*" "$OUT/ctest_gpu.log" | tail -15
fi
if has shards; then
  step shards
  # The GPU test binaries with the backward one sharded by variant (RMSNORM_VARIANTS, one process
  # each, side by side on this GPU: the oracle's checks are host work), the forward one and the
  # GPU corpus replay beside them. A shard's skipped big case (device memory) is reported.
  declare -A SHARD_PID
  # SHARDS_BWD=0: no backward shard; SHARDS_BWD=<pattern>: only the backward variants it matches
  # (a variant pattern: globs separated by commas, as rmsnorm-cert takes them).
  # SHARDS_FWD=0: no forward binary (a backward-only change); the corpus replay always runs.
  SHARDS_BWD=${SHARDS_BWD:-1}
  shard_pattern=$( [ "$SHARDS_BWD" = 1 ] && echo 'bwd.*' || echo "$SHARDS_BWD")
  # The packed variant's own test case runs in a process of its own (BWD_ALONE, a Catch2 name
  # pattern): beside 20 other processes it runs past the 400 s limit inside its variant's shard.
  # It needs about 320 s of host time beside five other processes (more than 270 s alone with 8
  # threads), so give this step TEST_TIMEOUT 400 or more. Its variant's shard runs the rest.
  BWD_ALONE=${BWD_ALONE:-packed rows of odd width*}
  for v in $( [ "$SHARDS_BWD" != 0 ] && $B/cli/rmsnorm-cert list variants --pattern "$shard_pattern" 2>/dev/null | awk '/^bwd\./{print $1}'); do
    RMSNORM_VARIANTS=$v timeout ${TEST_TIMEOUT:-400} $B/kernels/tests/test_gpu_backward -w NoTests "~$BWD_ALONE" > "$OUT/shard_$v.log" 2>&1 &
    SHARD_PID[bwd:$v]=$!
    if [[ $v == bwd.packed_rows* ]]; then
      RMSNORM_VARIANTS=$v timeout ${TEST_TIMEOUT:-400} $B/kernels/tests/test_gpu_backward -w NoTests "$BWD_ALONE" > "$OUT/shard_${v}_alone.log" 2>&1 &
      SHARD_PID[bwd:${v}_alone]=$!
    fi
  done
  # SHARDS_FWD=<Catch2 test-name pattern>: only those forward tests (e.g. "forward: fwd.packed_rows*"),
  # one process. SHARDS_FWD=1 (default): the whole forward binary, one process per test case,
  # FWD_JOBS (6) at a time, each case's log shard_fwd_NN.log: as one process it runs past 280 s
  # beside certify; a process per case takes about 176 s, 8 at a time.
  # Catch2 v2 test specs: a comma separates alternatives and brackets open tags, so names escape them.
  fwd_cases() {
    local i=0 rc=0 n
    while IFS= read -r n; do
      i=$((i + 1))
      [ "$(jobs -rp | wc -l)" -lt "${FWD_JOBS:-6}" ] || wait -n || rc=1
      timeout ${TEST_TIMEOUT:-400} $B/kernels/tests/test_gpu_forward -w NoTests "$n" > "$OUT/shard_fwd_$(printf %02d $i).log" 2>&1 &
    done < <($B/kernels/tests/test_gpu_forward --list-test-names-only | grep -v '^$' | sed 's/,/\\,/g; s/\[/\\[/g; s/\]/\\]/g')
    while [ -n "$(jobs -rp)" ]; do wait -n || rc=1; done
    [ $i -gt 0 ] || rc=1
    return $rc
  }
  if [ "${SHARDS_FWD:-1}" = 1 ]; then
    ( fwd_cases ) &
    SHARD_PID[test_gpu_forward]=$!
  elif [ "${SHARDS_FWD:-1}" != 0 ]; then
    timeout ${TEST_TIMEOUT:-400} $B/kernels/tests/test_gpu_forward -w NoTests "$SHARDS_FWD" > "$OUT/shard_test_gpu_forward.log" 2>&1 &
    SHARD_PID[test_gpu_forward]=$!
  fi
  (cd $B && timeout ${TEST_TIMEOUT:-400} ctest -R corpus.replay.gpu --output-on-failure) > "$OUT/shard_corpus.log" 2>&1 &
  SHARD_PID[corpus.replay.gpu]=$!
  for k in "${!SHARD_PID[@]}"; do wait ${SHARD_PID[$k]}; RESULT[shard_$k]=$?; done
  for f in "$OUT"/shard_*.log; do echo "$(basename $f): $(grep -E 'All tests passed|test cases:|assertions:|tests passed' $f | tail -1) $(grep -c 'skipped' $f) skipped"; done
fi
if has packed; then
  step packed
  # The packed variants (fwd.packed_rows, bwd.packed_rows) after a change to packed_tiles.cuh
  # or either kernel. Their own test cases (the forward's FP8 and odd-width cases; the backward's
  # packed-rows case in a process of its own with the default OpenMP threads: as one of 15 processes
  # with two threads it runs past 250 s), the generic forward cases and test_gpu_backward narrowed
  # to them (the 2^31 cases among them), certify of both, the corpus replay, and the products
  # through rmsnorm-bench under memcheck (every op and FP8 mode) and racecheck at tails (exact-size
  # buffers: D = 33, 1025, 2560, 8191). Side by side: the oracle's checks are host work.
  # PACKED_TIMEOUT bounds each.
  TF=$B/kernels/tests/test_gpu_forward; TB=$B/kernels/tests/test_gpu_backward; PT=${PACKED_TIMEOUT:-480}
  packed_bg() {  # name, then the command; its status lands in RESULT[packed_<name>] after the wait
    local name=$1; shift
    ( "$@" > "$OUT/packed_$name.log" 2>&1; echo $? > "$OUT/packed_$name.rc" ) &
  }
  packed_bg fwd_fp8 timeout $PT $TF -w NoTests 'forward: fwd.packed_rows\, FP8*'
  packed_bg fwd_odd timeout $PT $TF -w NoTests 'forward: fwd.packed_rows\, odd widths*'
  packed_bg fwd_generic env RMSNORM_VARIANTS=fwd.packed_rows timeout $PT $TF -w NoTests \
    "forward: FP8 quantization*,forward: seed widths*,forward: layouts*,forward: special rows*,forward: fused add,forward: conventions*,forward: R = 0*,[big]"
  packed_bg bwd_case env RMSNORM_VARIANTS='bwd.packed_rows*' timeout $PT $TB -w NoTests 'packed rows of odd width*'
  packed_bg bwd_rest env RMSNORM_VARIANTS='bwd.packed_rows*' timeout $PT $TB -w NoTests '~packed rows of odd width*'
  packed_bg certify timeout $PT bash -c "$B/cli/rmsnorm-cert certify fwd.packed_rows --cases 24 --jobs 2 --out '$OUT/packed_cert' && \
    $B/cli/rmsnorm-cert certify 'bwd.packed_rows*' --cases 12 --jobs 2 --out '$OUT/packed_cert'"
  packed_bg replay timeout $PT $B/cli/rmsnorm-cert replay corpora --variant 'fwd.packed_rows,bwd.packed_rows*' --quiet
  S="--dtype bf16,f32 --rows 4100 --dims 33,1025,2560,8191 --iters 5"
  for q in token static block; do
    timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant $q \
      --op forward,add_forward,forward_quant,add_forward_quant $S > "$OUT/packed_san_mem_fwd_$q.log" 2>&1; RESULT[packed_mem_fwd_$q]=$?
  done
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant 'bwd.packed_rows*' \
    --op backward,add_backward $S > "$OUT/packed_san_mem_bwd.log" 2>&1; RESULT[packed_mem_bwd]=$?
  R="--dtype bf16,f32 --rows 1001 --dims 33,1025 --iters 3"
  timeout 180 compute-sanitizer --tool racecheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant block \
    --op forward,add_forward,add_forward_quant $R > "$OUT/packed_san_race_fwd.log" 2>&1; RESULT[packed_race_fwd]=$?
  timeout 180 compute-sanitizer --tool racecheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant 'bwd.packed_rows*' \
    --op backward,add_backward $R > "$OUT/packed_san_race_bwd.log" 2>&1; RESULT[packed_race_bwd]=$?
  wait
  for f in "$OUT"/packed_*.rc; do
    n=$(basename "$f" .rc); RESULT[$n]=$(cat "$f")
    echo "$n rc=${RESULT[$n]} $(grep -h -E 'All tests passed|test cases:|PASS|FAIL|^replay:' "$OUT/$n.log" | tail -2 | tr '\n' ' ' | cut -c1-300)"
  done
  grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT"/packed_san_*.log | sort | uniq -c
fi
if has props && [ -x $B/properties/properties_suite ]; then
  step props
  # Chosen property-suite tests by Catch2 name pattern (PROPS; default: the declared-range check
  # of the CUDA variants, whose backward half needs a device).
  timeout ${PROPS_TIMEOUT:-300} $B/properties/properties_suite -w NoTests "${PROPS:-every CUDA product variant declines widths outside its declared D range*}" \
    > "$OUT/props.log" 2>&1; RESULT[props]=$?
  tail -4 "$OUT/props.log"
fi
if has corpus && [ -x $B/cli/rmsnorm-cert ]; then
  step corpus
  $B/cli/rmsnorm-cert replay corpora > "$OUT/corpus.log" 2>&1; RESULT[corpus]=$?
  tail -5 "$OUT/corpus.log"
fi
if has certify && [ -x $B/cli/rmsnorm-cert ]; then
  step certify
  # --deadline: no variant starts in the last 60 s of the step's limit (the summary then lists
  # the rest NOT RUN); the timeout stays as the hard stop.
  # CERTIFY: one pattern or several (space-separated, one certify run each, the limit shared).
  cert_start=$(date +%s); RESULT[certify]=0; k=0
  for pat in ${CERTIFY:-all}; do
    left=$(( ${CERT_TIMEOUT:-400} - ($(date +%s) - cert_start) ))
    [ $left -gt 30 ] || { echo "certify $pat: NOT RUN (CERT_TIMEOUT spent)" >> "$OUT/certify.log"; RESULT[certify]=1; continue; }
    timeout $left $B/cli/rmsnorm-cert certify "$pat" --cases ${CERT_CASES:-100} --jobs 8 \
      --deadline $(( left > 120 ? left - 60 : left / 2 )) --out "$OUT/cert$( [ $k -gt 0 ] && echo _$k )" >> "$OUT/certify.log" 2>&1 || RESULT[certify]=1
    k=$((k + 1))
  done
  tail -25 "$OUT/certify.log"
fi
if has mutants && [ -x $B/cli/rmsnorm-cert ]; then
  step mutants
  timeout ${MUTANTS_TIMEOUT:-420} $B/cli/rmsnorm-cert mutants --pattern "${MUTANTS:-mutant.*}" --budget ${MUTANT_BUDGET:-50} --jobs 8 ${MUTANT_FLAGS:---first-kill} \
    --timeout 120 --out "$OUT/mutants" > "$OUT/mutants.log" 2>&1; RESULT[mutants]=$?
  tail -45 "$OUT/mutants.log"
fi
if has fuzz && [ -x $B/cli/rmsnorm-cert ]; then
  step fuzz
  # The seeded differential loop over every product variant (failures minimized into $OUT/fuzz).
  timeout $(( ${FUZZ_SECONDS:-180} + 60 )) $B/cli/rmsnorm-cert fuzz --seconds ${FUZZ_SECONDS:-180} --variant "${FUZZ_VARIANT:-all}" \
    --seed ${FUZZ_SEED:-0x5e55104e3} --out "$OUT/fuzz" > "$OUT/fuzz.log" 2>&1; RESULT[fuzz]=$?
  tail -6 "$OUT/fuzz.log"
fi
if has sanitize; then
  step sanitize
  for tool in ${SAN_TOOLS:-memcheck racecheck}; do
    if [ "${SAN_FWD:-1}" = 1 ]; then
      timeout ${SAN_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 9 $B/kernels/tests/test_gpu_forward -w NoTests "forward: layouts*","forward: fused add","forward: FP8*" > "$OUT/san_fwd_$tool.log" 2>&1; RESULT[san_fwd_$tool]=$?
    fi
    if [ "${SAN_BWD:-1}" = 1 ]; then
      timeout ${SAN_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 9 $B/kernels/tests/test_gpu_backward -w NoTests "odd row strides*","zero rows*","in place*" > "$OUT/san_bwd_$tool.log" 2>&1; RESULT[san_bwd_$tool]=$?
    fi
    # The property suite's CUDA tests narrowed to some variants (a new kernel under the tools
    # without the whole forward/backward test binaries): SAN_VARIANTS="<glob> <glob>...", one
    # run each (RMSNORM_VARIANTS=<glob>), few cases.
    for glob in ${SAN_VARIANTS:-}; do
      RMSNORM_VARIANTS="$glob" RMSNORM_PROP_CASES=${SAN_CASES:-8} timeout ${SAN_TIMEOUT:-240} \
        compute-sanitizer --tool $tool --error-exitcode 9 $B/properties/properties_suite -w NoTests "*(CUDA variants)*" "~P18*" \
        > "$OUT/san_props_${glob//\*/x}_$tool.log" 2>&1; RESULT[san_${glob//\*/x}_$tool]=$?
    done
    # Corpus cases aimed at a persistent kernel's reuse of shared memory (the ring's two, and the
    # cp.async stage rings of fwd.block_row.staged and bwd.staged_rows wrapping), replayed under the
    # tool with one variant each (SAN_REPLAY="<case file>:<variant> ..."). The property cases are few
    # rows, so a ring that refills its slots only past the first row per block never does so under
    # racecheck there; these cases do.
    for fv in ${SAN_REPLAY:-corpora/regressions/forward_ring_partials_race.case:fwd.bulk_ring corpora/regressions/forward_ring_release_order.case:fwd.bulk_ring corpora/paths/fwd_staged_fp8_rows_per_block.case:fwd.block_row.staged corpora/paths/bwd_staged_stage_wrap.case:bwd.staged_rows}; do
      f=${fv%%:*}; v=${fv#*:}; n=$(basename "$f" .case)
      timeout ${SAN_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 9 $B/cli/rmsnorm-cert replay "$f" --variant "$v" \
        > "$OUT/san_replay_${n}_$tool.log" 2>&1; RESULT[san_replay_${n}_$tool]=$?
    done
    # The dispatched products through rmsnorm-bench, whose buffers are exact: tensors that end off
    # a 16-byte boundary (odd D; R = 4100, or 1001 under racecheck, which is slower) reach the
    # allocation's end, which the harness's guard bands keep every run above away from (a tensor's
    # last partial cp.async, which memcheck counts as a 16-byte read, shows only this way).
    # SAN_BENCH=0 skips it; SAN_BENCH_VARIANT narrows it to a variant pattern.
    if [ "${SAN_BENCH:-1}" = 1 ]; then
      rows=4100; [ "$tool" = racecheck ] && rows=1001
      for q in token block; do
        ops=forward,add_forward,forward_quant,add_forward_quant,backward,add_backward
        [ "$q" = block ] && ops=forward_quant,add_forward_quant  # the scale mode matters to these only
        timeout ${SAN_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 9 $B/bench/rmsnorm-bench \
          ${SAN_BENCH_VARIANT:+--variant "$SAN_BENCH_VARIANT"} --quant $q --op $ops --dtype bf16,f32 --rows $rows \
          --dims 33,1025,8191 --iters 5 > "$OUT/san_bench_${q}_$tool.log" 2>&1; RESULT[san_bench_${q}_$tool]=$?
      done
    fi
    tail -n 3 "$OUT"/san_*_$tool.log
  done
fi
if has sass; then
  step sass
  cuobjdump -sass $B/kernels/librmsnorm.a > "$OUT/sass.txt" 2>&1
  # 16-byte accesses with any cache qualifier (.EF: the streaming loads and stores of single-pass rows).
  echo "LDG.128: $(grep -cE 'LDG\.E(\.[A-Z]+)*\.128' "$OUT/sass.txt")  STG.128: $(grep -cE 'STG\.E(\.[A-Z]+)*\.128' "$OUT/sass.txt")  LDL/STL: $(grep -cE '\bLDL|\bSTL' "$OUT/sass.txt")"
  # SASS_FUNCS (an extended regex over mangled names): those kernels' listings alone, in the log
  # archive (the whole listing is large even compressed).
  [ -n "${SASS_FUNCS:-}" ] && awk -v re="$SASS_FUNCS" '/Function : /{p = ($0 ~ re)} p' "$OUT/sass.txt" > "$OUT/sass_funcs.txt"
  gzip -f "$OUT/sass.txt"  # the full listing is large: kept compressed, outside the log archive
fi
if has bench && [ -x $B/bench/rmsnorm-bench ]; then
  step bench
  # The default sweep (96 bf16 shapes, the FP8 forward per token and per block): the CSV is
  # written row by row, so a run stopped by BENCH_TIMEOUT keeps what it measured.
  timeout ${BENCH_TIMEOUT:-1800} $B/bench/rmsnorm-bench ${BENCH_ARGS:-} --csv "$OUT/bench.csv" > "$OUT/bench.log" 2>&1; RESULT[bench]=$?
  tail -60 "$OUT/bench.log"
  command -v python3 > /dev/null && python3 scripts/bench_table.py "$OUT/bench.csv" | tee "$OUT/bench_table.txt"
  if [ -n "${BENCH2_ARGS:-}" ]; then  # a second run (e.g. named variants side by side): bench2.csv
    timeout 300 $B/bench/rmsnorm-bench $BENCH2_ARGS --csv "$OUT/bench2.csv" > "$OUT/bench2.log" 2>&1; RESULT[bench2]=$?
    grep -vE "^ *$" "$OUT/bench2.log" | tail -60
  fi
fi
if has bench_ab; then
  step bench_ab
  # A kernel change against the binary before it (BENCH_BASE, built from the base commit, on any
  # machine with nvcc, and carried; BENCH_NEW, default this build's), same arguments (AB_ARGS),
  # run base, new, base, new: each run has its own same-run copy, and the two runs of a side show
  # the noise. bench_compare.py lists what moved. AB_ARGS2: a second argument set, its files ab2_*.
  BENCH_NEW=${BENCH_NEW:-$B/bench/rmsnorm-bench}
  for side in "${BENCH_BASE:-}" "$BENCH_NEW"; do
    [ -n "$side" ] && [ -x "$side" ] && [ ! -d "$side" ] && continue
    echo "bench_ab: '$side' is not an executable (BENCH_BASE and BENCH_NEW name the two binaries)"
    RESULT[bench_ab]=2
  done
  [ -n "${RESULT[bench_ab]:-}" ] || for set in 1 2; do
    args=${AB_ARGS:-}; pre=ab
    if [ $set = 2 ]; then [ -n "${AB_ARGS2:-}" ] || break; args=$AB_ARGS2; pre=ab2; fi
    for k in 1 2; do
      timeout 150 "$BENCH_BASE" $args --csv "$OUT/${pre}_base$k.csv" > "$OUT/${pre}_base$k.log" 2>&1; RESULT[${pre}_base$k]=$?
      timeout 150 "$BENCH_NEW" $args --csv "$OUT/${pre}_new$k.csv" > "$OUT/${pre}_new$k.log" 2>&1; RESULT[${pre}_new$k]=$?
    done
    # Each pair in full to a file; printed: what moved the same way in both pairs (--pair), then
    # each pair's counts and the base against itself (the noise).
    echo "--- $pre: $args"
    python3 scripts/bench_compare.py "$OUT/${pre}_base1.csv" "$OUT/${pre}_new1.csv" > "$OUT/${pre}_compare1.txt"
    python3 scripts/bench_compare.py "$OUT/${pre}_base2.csv" "$OUT/${pre}_new2.csv" > "$OUT/${pre}_compare2.txt"
    python3 scripts/bench_compare.py "$OUT/${pre}_base1.csv" "$OUT/${pre}_new1.csv" --pair "$OUT/${pre}_base2.csv" "$OUT/${pre}_new2.csv" | tee "$OUT/${pre}_agreed.txt"
    for k in 1 2; do grep -A8 "shapes moved by more than" "$OUT/${pre}_compare$k.txt" | sed "s/^/pair $k: /"; done
    python3 scripts/bench_compare.py "$OUT/${pre}_base1.csv" "$OUT/${pre}_base2.csv" | tail -3 | sed 's/^/base vs base: /'
  done
fi
# Where bench/peers.py finds the optional peers: PEER_PYTHONPATH (Liger from .deps/pylib, QuACK
# put together from scripts/quack_site.sh's two parts under .deps/quack, then PYTHONPATH) and
# PEER_PLUGIN (this build's FlashInfer plugin, as peers.py's option, when it was built).
peer_paths() {
  local pylib fi_plugin=$B/adapters/libflashinfer_norm_plugin.so qpath
  pylib=$( [ -d .deps/pylib ] && echo "$PWD/.deps/pylib" )
  if [ -f .deps/quack/part1/ir.so.xz ] && [ -f .deps/quack/part2/rt.so.xz ]; then
    qpath=$(scripts/quack_site.sh unpack "$PWD/.deps/quack/site" .deps/quack/part1 .deps/quack/part2 2> "$OUT/quack_site.log") \
      && pylib=$pylib${pylib:+:}$qpath || echo "QuACK not put together: $(tail -1 "$OUT/quack_site.log")"
  fi
  PEER_PYTHONPATH=$pylib${pylib:+${PYTHONPATH:+:}}${PYTHONPATH:-}
  PEER_PLUGIN=$( [ -f "$fi_plugin" ] && echo --flashinfer-plugin "$fi_plugin" )
}
if has peers; then
  step peers
  # The peers (bench/peers.py: PyTorch eager and torch.compile; Liger-Kernel from .deps/pylib; the
  # FlashInfer plugin of this build; QuACK from .deps/quack (scripts/quack_site.sh's two parts,
  # put together here) or wherever it is importable; each missing one skipped with its reason)
  # beside their own same-run copy, then the table of ours against the best peer per shape (our
  # bench.csv from the bench step, when present). PEERS_ARGS: default rmsnorm-bench's sweep
  # (--quick: 6 shapes); with --resume an existing $OUT/peers.csv keeps its rows.
  peer_paths
  PYTHONPATH=$PEER_PYTHONPATH timeout ${PEERS_TIMEOUT:-3600} python3 bench/peers.py ${PEERS_ARGS:-} \
    $PEER_PLUGIN --csv "$OUT/peers.csv" > "$OUT/peers.log" 2>&1; RESULT[peers]=$?
  tail -40 "$OUT/peers.log"
  [ -f "$OUT/bench.csv" ] && python3 scripts/bench_table.py "$OUT/bench.csv" "$OUT/peers.csv" | tee "$OUT/peers_table.txt"
fi
if has doc && [ -f "$OUT/bench.csv" ]; then
  step doc
  # docs/performance.md's generated part from this run's CSVs (its "why" table attached to every
  # miss); the rewritten doc is also left under $OUT.
  about="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), CUDA $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  about="$about, commit ${RMSNORM_SOURCE_COMMIT:-$(git rev-parse --short HEAD 2> /dev/null || echo unknown)}, $(date -u +%Y-%m-%d)"
  python3 scripts/bench_table.py --doc docs/performance.md --about "$about" \
    "$OUT/bench.csv" $( [ -f "$OUT/peers.csv" ] && echo "$OUT/peers.csv") | tee "$OUT/doc.txt"; RESULT[doc]=${PIPESTATUS[0]}
  cp docs/performance.md "$OUT/performance.md"
fi
# Bandwidth-vs-D plots and ratio heat maps of whatever CSVs the run wrote (needs matplotlib).
if [ -f "$OUT/bench.csv" ] && python3 -c "import matplotlib" 2> /dev/null; then
  PYTHONPATH=python python3 -m rmsnorm_cert plots "$OUT/bench.csv" $( [ -f "$OUT/peers.csv" ] && echo "$OUT/peers.csv") --out "$OUT/plots"
fi
# The figures a why row quotes, from an ncu log: one line, the fields of each profiled launch.
# With the scheduler's figures and the leading stall (WarpStateStats' rule text, whose lines ncu
# wraps): where a kernel is bound on the chip rather than by DRAM, they say which way.
ncu_summary() {
  {
    grep -E '^ +(Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Block Size|Grid Size|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued Instruction|Issue Slots Busy|Executed Instructions)' "$1" |
      awk '{$1=$1};1'
    tr -s ' \n' '  ' < "$1" | grep -oE 'spends [0-9.]+ cycles being stalled [^.]*\. This represents about [0-9.]+%' | sed 's/^/stall: /'
  } | tr '\n' ';'
}
if has profile && [ -x $B/bench/rmsnorm-bench ]; then
  step profile
  ncu_sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
    --section MemoryWorkloadAnalysis --section SchedulerStats ${NCU_SECTIONS:-}"
  # Nsight Compute on chosen shapes (PROFILE: "op:R:D[:variant] ..."): one launch each after
  # warm-up, clocks left alone; the bench's rotation means the data comes from HBM.
  # NCU_SECTIONS adds sections (e.g. "--section InstructionStats --section SourceCounters").
  # A backward is two kernels (stage 1, then the dg column sum, dg_column_sum_kernel):
  # NCU_KERNELS='^(backward_|dg_)' NCU_SKIP=6 NCU_LAUNCHES=2 profiles one of each.
  # PROFILE_OURS=0: only the peers' kernels (PROFILE_PEERS) at those shapes.
  # PROFILE_DTYPE: the element type of every shape (bf16 unless given; f16, f32); a log's name
  # carries it when it is not bf16.
  pdt=${PROFILE_DTYPE:-bf16}; pdt_tag=$( [ "$pdt" = bf16 ] || echo "_$pdt" )
  [ -n "${PROFILE_PEERS:-}" ] && peer_paths
  for spec in ${PROFILE:-forward:8192:4096 forward_quant:8192:4096 add_forward_quant:8192:4096 backward:8192:4096 forward:32768:1025 forward:4096:65536}; do
    IFS=: read -r op r d v <<< "$spec"
    # An FP8 op may name its scale mode as the bench's tables do (forward_quant.block, .static).
    base=${op%.*}; q=${op#"$base"}; q=${q#.}
    if [ "${PROFILE_OURS:-1}" != 0 ]; then
      timeout 120 ncu --clock-control none --launch-skip ${NCU_SKIP:-5} --launch-count ${NCU_LAUNCHES:-1} -k "regex:${NCU_KERNELS:-^(fwd_|backward_)}" \
        $ncu_sections \
        $B/bench/rmsnorm-bench --op "$base" ${q:+--quant "$q"} --dtype "$pdt" --rows "$r" --dims "$d" ${v:+--variant "$v"} --iters 20 \
        > "$OUT/ncu_${op}_${r}x${d}${pdt_tag}${v:+_$v}.log" 2>&1
      echo "$spec${pdt_tag}: $(ncu_summary "$OUT/ncu_${op}_${r}x${d}${pdt_tag}${v:+_$v}.log")"
    fi
    [ -n "$q" ] && continue  # the peers have the per-token FP8 forward only
    # PROFILE_PEERS (e.g. "compile quack"): the same shape's peer kernels, launched by bench/peers.py
    # (its warm-up and first timed calls skipped), for a why row beside ours.
    for peer in ${PROFILE_PEERS:-}; do
      case $peer in
        compile) kernels='^triton_' ;;
        liger) kernels='rms_norm' ;;
        flashinfer) kernels='RMSNorm' ;;            # flashinfer::norm::{,FusedAdd}RMSNormKernel
        quack) kernels='cutlass|RMSNorm|rmsnorm' ;;  # the CuTe DSL names its kernels after the module
        *) echo "  $peer: not profiled (PROFILE_PEERS takes compile, liger, flashinfer, quack)"; continue ;;
      esac
      log="$OUT/ncu_${op}_${r}x${d}${pdt_tag}_$peer.log"
      PYTHONPATH=$PEER_PYTHONPATH TORCHINDUCTOR_COMPILE_THREADS=1 timeout 180 \
        ncu --clock-control none --launch-skip 6 --launch-count 2 -k "regex:$kernels" \
        $ncu_sections \
        python3 bench/peers.py --peers "$peer" $PEER_PLUGIN --ops "$op" --dtypes "$pdt" --rows "$r" --dims "$d" --iters 5 --no-extra > "$log" 2>&1
      echo "  $peer: $(ncu_summary "$log")"
    done
  done
fi
step summary
for k in "${!RESULT[@]}"; do printf "%-20s rc=%s\n" "$k" "${RESULT[$k]}"; done | sort | tee "$OUT/summary.txt"
# Pack this script's logs into one archive ($LOGS_TGZ), keeping summary.txt, bench.csv, peers.csv,
# performance.md and sass.txt.gz beside it and whatever $OUT held before.
(
  cd "$OUT" || exit 0
  packed=()
  for f in * .[!.]*; do
    [ -e "$f" ] || continue
    case "$f" in "$LOGS_TGZ" | summary.txt | bench.csv | peers.csv | performance.md | sass.txt.gz) continue ;; esac
    [ -n "${PREEXISTING[$f]:-}" ] && continue
    packed+=("$f")
  done
  if [ ${#packed[@]} -gt 0 ] && tar czf "$LOGS_TGZ" -- "${packed[@]}"; then rm -rf -- "${packed[@]}"; fi
)
# Honest exit status: 1 when any step failed (its own status is in summary.txt).
for k in "${!RESULT[@]}"; do [ "${RESULT[$k]}" = 0 ] || exit 1; done
exit 0
