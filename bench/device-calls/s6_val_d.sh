#!/usr/bin/env bash
# Device call (2026-12-01, sixth session, validation D): the pyzoo `item` case, two more
# interleaved rounds with the final binaries; captures returned.
set -u
B=$PWD/.carry-val6
mkdir -p $OUT
OUT=$OUT ROUNDS=2 CASES=item BUDGET_S=200 scripts/validate-pyzoo $B 2>&1 | tail -3
(cd $OUT/caps && tar -czf $OUT/item_caps.tar.gz .); rm -rf $OUT/caps
