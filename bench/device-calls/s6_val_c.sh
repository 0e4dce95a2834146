#!/usr/bin/env bash
# Device call (2026-12-01, sixth session, validation C): the pyzoo `item` case redesigned (a
# loss.item() every step in front of the next step's host work), untraced twice and traced once.
set -u
B=$PWD/.carry-val6
mkdir -p $OUT
OUT=$OUT ROUNDS=2 CASES=item BUDGET_S=200 scripts/validate-pyzoo $B 2>&1 | tail -3
cp $OUT/pyzoo.jsonl $OUT/item.jsonl
rm -rf $OUT/caps
