#!/usr/bin/env python3
"""Which code each transaction the load generator spoiled must have (ours; the control point, issue 49).

Reads the generator's marks (our patch 0001: "<tx id>,bad_signature" or "<tx id>,dependency,<key hex>",
mutations.log) and the store's transactions in ledger order (block_txs.csv: block_number, tx_index, tx_id),
and writes mutations.csv (the core's table: block_number, tx_index, tx_id, mutation; block -1: found by ID).
What each must be follows from the marks alone, walked in the ledger's order, never from the codes:
a wrongly signed transaction is bad_signature (the verifier runs before MVCC validation); of the others, one
that reads a dependency key an earlier committed transaction wrote is conflict (both of a pair read the new
key at no version and write it, so whichever comes later conflicts); every other commits, writing its keys.
A marked transaction the store lacks is still listed (bad_signature, or conflict if it has only dependency
marks), so that the core's check reports it missing instead of passing it.

Usage: expected_mutations.py MUTATIONS_LOG BLOCK_TXS_CSV OUT_CSV
"""

import csv
import sys


def read_marks(path):
    """tx id -> (wrongly signed, set of dependency keys)."""
    marks = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split(",")
            if parts == [""]:
                continue
            bad, keys = marks.setdefault(parts[0], (False, set()))
            if parts[1:] == ["bad_signature"]:
                marks[parts[0]] = (True, keys)
            elif len(parts) == 3 and parts[1] == "dependency":
                keys.add(parts[2])
            else:
                sys.exit(f"{path}:{n}: not a mark of patch 0001: {line.strip()!r}")
    return marks


def expected(marks, ledger):
    """(tx id, mutation) for each marked transaction, in ledger order, then those the ledger lacks."""
    written, out, seen = set(), [], set()
    for tx_id in ledger:
        if tx_id not in marks or tx_id in seen:
            continue
        seen.add(tx_id)
        bad, keys = marks[tx_id]
        if bad:
            out.append((tx_id, "bad_signature"))
        elif keys & written:
            out.append((tx_id, "conflict"))
        else:
            written |= keys
    out += [(t, "bad_signature" if bad else "conflict") for t, (bad, _) in marks.items() if t not in seen]
    return out


def main(log, block_txs, out_csv):
    marks = read_marks(log)
    with open(block_txs, encoding="utf-8") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: (int(r["block_number"]), int(r["tx_index"])))
    with open(out_csv, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["block_number", "tx_index", "tx_id", "mutation"])
        for tx_id, mutation in expected(marks, [r["tx_id"] for r in rows]):
            w.writerow([-1, -1, tx_id, mutation])


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__.rsplit("Usage: ", 1)[1].strip())
    main(*sys.argv[1:])
