#!/usr/bin/env bash
# replan before and after it weighs the column-wise group (HEAD: the binary of 07fac20, whose replan
# search leaves the group out; NOW: this change's), the 10% budget on the four drifted sets, in one run.
#   data/measured/cpu-2core/replan-61/groups-check/run.sh HEAD_BINARY NOW_BINARY   (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
R="$here/.."
for set in 8gpu 32gpu 2-8gpu 2-32gpu; do
  case $set in
    2-*) old=$R/fresh2-${set#2-}.json; new=$R/drift2-${set#2-}.json ;;
    *) old=$R/fresh-$set.json; new=$R/drift-$set.json ;;
  esac
  for who in head now; do
    bin=$1; [ $who = now ] && bin=$2
    tools/replan-bench --binary "$bin" --old "$old" --new "$new" --out "/tmp/c4-$set-$who" --budget 10% \
      >"$here/summary-$set-$who.json" 2>/dev/null
    cp "/tmp/c4-$set-$who/replan.json" "$here/replan-$set-$who.json"
  done
done
