#!/usr/bin/env bash
# Session 25: the final tree's proof on the H200, in parts that each fit one device call.
# Usage: final_call.sh A|B|C   (the prebuilt archive .probe/prebuilt_head.tar.xz, carried, built
# from .source-commit; gpu_session.sh runs under an outer limit so this wrapper always packs:
# at most 8 files come back).
#   A: every GPU test binary sharded (each backward variant a process, the forward a process per
#      test case, the GPU corpus replay beside them), every mutant (kill matrix), the SASS counts.
#   B: certify every variant (CERT_CASES a property, the corpus), the default bench, the peers.
#   C: what A and B left (written after them): bwd.packed_rows' own test case in a process of its
#      own (in A's shard it ran past the 400 s limit beside 20 other processes) and the four cases
#      after it, and certify of the five backward variants B's deadline left (the device time left
#      after a refused start held no more).
set -u
part=${1:?A, B or C}
OUT=${OUT:-/tmp/out}; O=$OUT; G=$OUT/gs; mkdir -p "$G"
export PREBUILT=.probe/prebuilt_head.tar.xz OUT=$G
case $part in
  A) steps="prebuilt shards mutants sass"; export TEST_TIMEOUT=400 MUTANTS_TIMEOUT=${MUTANTS_TIMEOUT:-200} ;;
  B) steps="prebuilt certify bench peers"; export CERTIFY="fwd.* bwd.*" CERT_CASES=${CERT_CASES:-10} CERT_TIMEOUT=${CERT_TIMEOUT:-390} PEERS_TIMEOUT=${PEERS_TIMEOUT:-100} ;;
  C) B=build/gpu; xz -dc $PREBUILT | tar -xf - || exit 1
     echo "prebuilt $(cat $B/PREBUILT_COMMIT), tree $(cat .source-commit)"
     TB=$B/kernels/tests/test_gpu_backward; L=${LIMIT:-270}
     ( OMP_NUM_THREADS=8 RMSNORM_VARIANTS='bwd.packed_rows*' timeout $L $TB -w NoTests 'packed rows of odd width*' > $G/bwd_packed_case.log 2>&1; echo "bwd packed case rc=$?" ) &
     ( RMSNORM_VARIANTS='bwd.packed_rows*' timeout $L $TB -w NoTests 'bwd.staged_cluster over many rows*,the dispatcher*,100 repeated runs*,64-bit offsets*' > $G/bwd_packed_rest.log 2>&1; echo "bwd packed rest rc=$?" ) &
     ( timeout $L $B/cli/rmsnorm-cert certify 'bwd.staged_rows*,bwd.cluster_rows*,bwd.persistent_rows*,bwd.reread_rows*,bwd.packed_rows*' --cases ${CERT_CASES:-10} --jobs 6 \
         --deadline $((L - 60)) --out $G/cert > $G/certify.log 2>&1; echo "certify rc=$?" ) &
     wait
     grep -h -E "All tests passed|test cases:|^(PASS|FAIL|NOT RUN)" $G/*.log
     (cd "$O" && tar czf logs_C.tgz gs && rm -rf gs); exit 0 ;;
esac
timeout ${LIMIT:-565} bash scripts/gpu_session.sh $steps > "$O/session_$part.log" 2>&1
echo "gpu_session $part rc=$?"
cp "$G/summary.txt" "$O/summary_$part.txt" 2>/dev/null; cp "$G/bench.csv" "$O/bench.csv" 2>/dev/null; cp "$G/peers.csv" "$O/peers.csv" 2>/dev/null
(cd "$O" && tar czf "logs_$part.tgz" gs && rm -rf gs)
grep -E "^shard_|kill|survived|PASS|FAIL|NOT RUN|NOT EXERCISED|LDG.128|ERROR SUMMARY|RACECHECK SUMMARY|rc=" "$O/session_$part.log" | grep -v "^\s*$" | head -70
grep -A10 "^op " "$O/session_$part.log" | head -24
