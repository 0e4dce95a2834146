# Sourced by the s7_serve_* device calls: runs examples/serve/decode.py untraced or under
# `gpuscope run` (carried binaries in .carry-s7) and logs each run's JSON line to $OUT/serve.jsonl.
set -u
B=$PWD/.carry-s7
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
D="python3 examples/serve/decode.py"
mkdir -p $OUT/caps
R=$OUT/serve.jsonl
log() { echo "{\"case\": \"$1\", \"mode\": \"$2\", \"result\": ${3:-null}}" >> $R; }
untraced() {
  local name=$1; shift
  local out; out=$(timeout 150 $D "$@" 2>>$OUT/err.log | tail -1)
  log $name untraced "$out"; echo "$name untraced $out" | cut -c1-200
}
# traced NAME [--analyze] ARGS...: under gpuscope run; --analyze also writes NAME.json/.txt.
traced() {
  local name=$1; shift
  local analyze=0; [ "${1:-}" = "--analyze" ] && { analyze=1; shift; }
  timeout 200 $B/gpuscope run --no-report -o $OUT/caps/$name.gpuscope -- $D "$@" > $OUT/cur.out 2>>$OUT/err.log
  local out; out=$(tail -1 $OUT/cur.out)
  log $name traced "$out"; echo "$name traced $out" | cut -c1-200
  if [ $analyze = 1 ]; then
    $B/gpuscope analyze --json $OUT/caps/$name.gpuscope > $OUT/caps/$name.json 2>>$OUT/err.log
    NO_COLOR=1 $B/gpuscope analyze $OUT/caps/$name.gpuscope > $OUT/caps/$name.txt 2>&1
  fi
}
# bounded NAME STEPS ARGS...: under gpuscope run --steps STEPS --skip-steps 10, no calibration.
bounded() {
  local name=$1 steps=$2; shift 2
  timeout 150 $B/gpuscope run --no-calibrate --no-report --steps $steps --skip-steps 10 -o $OUT/caps/$name.gpuscope -- $D "$@" > $OUT/cur.out 2>>$OUT/err.log
  local out; out=$(tail -1 $OUT/cur.out); log $name traced "$out"; echo "$name $out" | cut -c1-200
}
