#!/usr/bin/env bash
# The GPU differential fuzz loop, demonstrated on a planted bug: apply fuzz/planted/*.patch,
# rebuild rmsnorm-cert, let `rmsnorm-cert fuzz` find and minimize a failure, replay the written
# case (must fail), remove the bug, rebuild, replay the same case (must pass). The patch is
# reverted on every exit path (trap); an interrupted run also rebuilds, so that build/gpu never
# keeps a buggy librmsnorm.a or rmsnorm-cert.
#
# Run from the repository root on the GPU host, with build/gpu already configured and built
# (`cmake --preset gpu && cmake --build --preset gpu`, or scripts/gpu_session.sh build):
#   OUT=/some/dir scripts/gpu_planted_bug.sh
# Then, without the bug, the same fuzz command runs CLEAN_FUZZ_SECONDS (20; 0: not at all): it
# must find nothing, and its last line gives the loop's cases/s on this GPU.
# Results: $OUT/planted_bug/summary.txt, $OUT/planted_bug/logs.tgz (every log; PACK=0 leaves
# them unpacked), the minimized case under $OUT/planted/.
# Environment: B (build dir, default build/gpu), PATCH (default fuzz/planted/backward_tail.patch),
# VARIANT (default bwd.persistent_rows), OP (backward), SEED (1), FUZZ_SECONDS (120),
# CLEAN_FUZZ_SECONDS (20), JOBS (16), PACK (1).
# Exit 0 when the demonstration holds (found, replay fails with the bug, passes without it).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out}
B=${B:-build/gpu}
PATCH=${PATCH:-fuzz/planted/backward_tail.patch}
VARIANT=${VARIANT:-bwd.persistent_rows}
OP=${OP:-backward}
SEED=${SEED:-1}
FUZZ_SECONDS=${FUZZ_SECONDS:-120}
CLEAN_FUZZ_SECONDS=${CLEAN_FUZZ_SECONDS:-20}
PACK=${PACK:-1}
JOBS=${JOBS:-16}
LOG="$OUT/planted_bug"
CASES_DIR="$OUT/planted"
CERT="$B/cli/rmsnorm-cert"
mkdir -p "$LOG"
t0=$(date +%s)
step() { echo; echo "=== $1 ($(( $(date +%s) - t0 ))s)"; }

# git apply works outside a repository too; `patch` is the fallback where git is missing.
patch_cmd() {  # patch_cmd forward|reverse|check|check-reverse
  if command -v git > /dev/null; then
    case $1 in
      forward) git apply "$PATCH" ;;
      reverse) git apply -R "$PATCH" ;;
      check) git apply --check "$PATCH" ;;
      check-reverse) git apply --check -R "$PATCH" ;;
    esac
  else
    case $1 in
      forward) patch -p1 --forward --silent < "$PATCH" ;;
      reverse) patch -p1 --reverse --silent < "$PATCH" ;;
      check) patch -p1 --forward --dry-run --silent < "$PATCH" ;;
      check-reverse) patch -p1 --reverse --dry-run --silent < "$PATCH" ;;
    esac
  fi
}

build_cert() {  # build_cert LOGFILE: incremental build of rmsnorm-cert; rc of the build
  local start rc
  start=$(date +%s)
  cmake --build "$B" -j "$JOBS" --target rmsnorm-cert > "$1" 2>&1; rc=$?
  echo "build: rc=$rc in $(( $(date +%s) - start )) s ($1)"
  [ $rc -ne 0 ] && grep -E "error|warning" "$1" | head -20
  return $rc
}

PATCHED=0        # the bug is in the source tree
BUGGY_BUILD=0    # build/gpu may hold objects built with the bug
cleanup() {
  if [ $PATCHED -eq 1 ]; then
    if patch_cmd reverse; then
      PATCHED=0
      echo "trap: planted bug removed from the source tree"
    else
      echo "trap: COULD NOT REVERT $PATCH: the tree still has the planted bug; revert by hand: git apply -R $PATCH" >&2
    fi
  fi
  if [ $PATCHED -eq 0 ] && [ $BUGGY_BUILD -eq 1 ]; then
    echo "trap: rebuilding rmsnorm-cert without the bug"
    build_cert "$LOG/build_trap.log" && BUGGY_BUILD=0
    [ $BUGGY_BUILD -eq 1 ] && echo "trap: WARNING: $B still holds objects built with the planted bug: rebuild before any other test" >&2
  fi
  # Few files come back from the GPU host: every log in one archive, the summary beside it.
  if [ "$PACK" = 1 ] && compgen -G "$LOG/*.log" > /dev/null; then
    (cd "$LOG" && tar czf logs.tgz ./*.log && rm -f ./*.log)
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

FOUND=no SECS=- CASES=- RATE=- CASE_FILE=- MINIMIZED=- RC_FUZZ=- RC_BUG=- RC_FIXED=- CLEAN="not run"
summary() {
  {
    printf "%-26s %s\n" "found" "$FOUND (fuzz rc=$RC_FUZZ; $VARIANT, --op $OP, --seed $SEED)"
    printf "%-26s %s\n" "seconds to find" "$SECS s, $CASES cases, $RATE cases/s"
    printf "%-26s %s\n" "minimized case" "$CASE_FILE ($MINIMIZED)"
    printf "%-26s %s\n" "replay with bug" "rc=$RC_BUG (expected 1)"
    printf "%-26s %s\n" "replay after removal" "rc=$RC_FIXED (expected 0)"
    printf "%-26s %s\n" "fuzz after removal" "$CLEAN"
    if [ -f "$CASE_FILE" ]; then
      echo "--- first lines of the case:"
      head -n 16 "$CASE_FILE" | sed 's/^/    /'
    fi
  } | tee "$LOG/summary.txt"
}

step "preflight"
if [ ! -f "$B/build.ninja" ] && [ ! -f "$B/Makefile" ]; then
  echo "no configured build in $B: run cmake --preset gpu first" >&2; exit 2
fi
[ -f "$PATCH" ] || { echo "no $PATCH" >&2; exit 2; }
if ! patch_cmd check; then
  if patch_cmd check-reverse; then
    # An earlier run was killed before its trap could run: start from the clean source.
    echo "the planted bug is already applied (an interrupted earlier run?): removing it first"
    patch_cmd reverse || exit 2
  else
    echo "$PATCH does not apply to this tree (backward_kernels.cuh changed?): refresh the patch" >&2; exit 2
  fi
fi

step "apply the planted bug and build"
patch_cmd forward || { echo "git apply failed" >&2; exit 2; }
PATCHED=1
BUGGY_BUILD=1
if ! build_cert "$LOG/build_with_bug.log"; then
  echo "the build with the planted bug failed (warnings are errors): see $LOG/build_with_bug.log"
  summary; exit 1
fi

step "fuzz: $VARIANT, --op $OP, --seed $SEED, $FUZZ_SECONDS s"
rm -rf "$CASES_DIR"
# The time box covers the loop; the minimizer has its own 120 s cap.
timeout $(( FUZZ_SECONDS + 240 )) "$CERT" fuzz --seconds "$FUZZ_SECONDS" --variant "$VARIANT" --op "$OP" --seed "$SEED" \
  --out "$CASES_DIR" > "$LOG/fuzz.log" 2>&1; RC_FUZZ=$?
grep -E "^fuzz: (seed|FAIL|minimiz|wrote|no failure)|^  " "$LOG/fuzz.log" | head -20
# "fuzz: FAIL after N cases (X s): ..." (the progress line with cases/s goes to a terminal only).
read -r CASES SECS < <(sed -n 's/^fuzz: FAIL after \([0-9]*\) cases (\([0-9.]*\) s).*/\1 \2/p' "$LOG/fuzz.log" | head -1)
if [ -n "${CASES:-}" ]; then
  RATE=$(awk -v n="$CASES" -v s="$SECS" 'BEGIN { if (s > 0) printf "%.1f", n / s; else printf "n/a" }')
else
  # No failure: "fuzz: no failure: N cases in X s (R cases/s), ..."
  read -r CASES SECS RATE < <(sed -n 's/^fuzz: no failure: \([0-9]*\) cases in \([0-9.]*\) s (\([0-9.]*\) cases\/s).*/\1 \2 \3/p' "$LOG/fuzz.log" | head -1)
  CASES=${CASES:--} SECS=${SECS:--} RATE=${RATE:--}
fi
MINIMIZED=$(sed -n 's/^fuzz: minimized to \(R=[0-9]* D=[0-9]*\) in \([0-9]*\) attempts.*/\1, \2 attempts/p' "$LOG/fuzz.log" | head -1)
mapfile -t CASE_FILES < <(find "$CASES_DIR" -name '*.case' 2>/dev/null | sort)
if [ "$RC_FUZZ" -eq 1 ] && [ ${#CASE_FILES[@]} -gt 0 ]; then
  FOUND=yes
  CASE_FILE=${CASE_FILES[0]}
else
  echo "the fuzzer did not produce a minimized failure (rc=$RC_FUZZ): see $LOG/fuzz.log"
  summary; exit 1
fi

step "replay the minimized case with the bug (expect FAIL, rc 1)"
"$CERT" replay "${CASE_FILES[@]}" > "$LOG/replay_with_bug.log" 2>&1; RC_BUG=$?
tail -4 "$LOG/replay_with_bug.log"

step "remove the planted bug and rebuild"
if patch_cmd reverse; then PATCHED=0; else echo "git apply -R failed" >&2; summary; exit 1; fi
if build_cert "$LOG/build_reverted.log"; then
  BUGGY_BUILD=0
else
  echo "the rebuild without the bug failed: see $LOG/build_reverted.log"; summary; exit 1
fi

step "replay the same case without the bug (expect ok, rc 0)"
"$CERT" replay "${CASE_FILES[@]}" > "$LOG/replay_reverted.log" 2>&1; RC_FIXED=$?
tail -4 "$LOG/replay_reverted.log"

if [ "$CLEAN_FUZZ_SECONDS" -gt 0 ]; then
  step "fuzz without the bug: same command, $CLEAN_FUZZ_SECONDS s (expect no failure, rc 0)"
  timeout $(( CLEAN_FUZZ_SECONDS + 240 )) "$CERT" fuzz --seconds "$CLEAN_FUZZ_SECONDS" --variant "$VARIANT" --op "$OP" \
    --seed "$SEED" --out "$OUT/planted_clean" > "$LOG/fuzz_clean.log" 2>&1; rc=$?
  grep -E "^fuzz: (no failure|FAIL|wrote)" "$LOG/fuzz_clean.log"
  CLEAN="rc=$rc (expected 0): $(grep -Eo "[0-9.]+ cases/s" "$LOG/fuzz_clean.log" | head -1 || true)"
  [ $rc -ne 0 ] && CLEAN="$CLEAN -- a failure WITHOUT the planted bug: see fuzz_clean.log"
fi

step "summary"
summary
[ "$FOUND" = yes ] && [ "$RC_BUG" -eq 1 ] && [ "$RC_FIXED" -eq 0 ]
