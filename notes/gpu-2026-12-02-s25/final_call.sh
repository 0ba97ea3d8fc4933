#!/usr/bin/env bash
# Session 25: the final tree's proof on the H200, in parts that each fit one device call.
# Usage: final_call.sh A|B|C   (the prebuilt archive .probe/prebuilt_head.tar.xz, carried, built
# from .source-commit; gpu_session.sh runs under an outer limit so this wrapper always packs:
# at most 8 files come back).
#   A: every GPU test binary sharded (each backward variant a process, the forward a process per
#      test case, the GPU corpus replay beside them), every mutant (kill matrix), the SASS counts.
#   B: certify every variant (CERT_CASES a property, the corpus), the default bench, the peers.
#   C: compute-sanitizer memcheck and racecheck: the ring / staged corpus cases and the dispatched
#      products through rmsnorm-bench at odd widths with exact-size buffers.
set -u
part=${1:?A, B or C}
OUT=${OUT:-/tmp/out}; G=$OUT/gs; mkdir -p "$G"
export PREBUILT=.probe/prebuilt_head.tar.xz OUT=$G
case $part in
  A) steps="prebuilt shards mutants sass"; export TEST_TIMEOUT=400 MUTANTS_TIMEOUT=${MUTANTS_TIMEOUT:-200} ;;
  B) steps="prebuilt certify bench peers"; export CERTIFY="fwd.* bwd.*" CERT_CASES=${CERT_CASES:-10} CERT_TIMEOUT=${CERT_TIMEOUT:-390} PEERS_TIMEOUT=${PEERS_TIMEOUT:-100} ;;
  C) steps="prebuilt sanitize"; export SAN_FWD=0 SAN_BWD=0 SAN_TIMEOUT=${SAN_TIMEOUT:-100} ;;
esac
timeout ${LIMIT:-565} bash scripts/gpu_session.sh $steps > "$OUT/../session_$part.log" 2>&1
echo "gpu_session $part rc=$?"
O=$OUT/..
cp "$G/summary.txt" "$O/summary_$part.txt" 2>/dev/null; cp "$G/bench.csv" "$O/bench.csv" 2>/dev/null; cp "$G/peers.csv" "$O/peers.csv" 2>/dev/null
(cd "$O" && tar czf "logs_$part.tgz" gs && rm -rf gs)
grep -E "^shard_|kill|survived|PASS|FAIL|NOT RUN|NOT EXERCISED|LDG.128|ERROR SUMMARY|RACECHECK SUMMARY|rc=" "$O/session_$part.log" | grep -v "^\s*$" | head -70
grep -A10 "^op " "$O/session_$part.log" | head -24
