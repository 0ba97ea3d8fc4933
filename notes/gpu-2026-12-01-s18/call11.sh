#!/usr/bin/env bash
# Session 18 call 11: differential fuzz of this session's changed kernels, 150 s each, side by side.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
mkdir -p $OUT/found
f() { timeout 200 $B/cli/rmsnorm-cert fuzz --seconds 150 --variant "$1" --op $2 --seed $3 --out $OUT/found > $OUT/fuzz_$4.log 2>&1; echo "rc=$?" > $OUT/fuzz_$4.rc; }
f 'bwd.staged*,bwd.persistent_rows*' backward 0x5e18b001 bwd &
f 'bwd.staged*,bwd.persistent_rows*' add_backward 0x5e18b002 addbwd &
f 'fwd.bulk_ring' forward_quant 0x5e18f003 ringq &
f 'fwd.bulk_ring' add_forward_quant 0x5e18f004 ringaddq &
wait
for n in bwd addbwd ringq ringaddq; do el "fuzz $n $(cat $OUT/fuzz_$n.rc) $(grep -vE '^\s*$' $OUT/fuzz_$n.log | tail -2 | tr '\n' ' ' | cut -c1-250)"; done
ls $OUT/found
cd $OUT && tar -czf logs.tgz fuzz_* found && find . -maxdepth 1 -type f ! -name logs.tgz -delete; cd - >/dev/null
el done
