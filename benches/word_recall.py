#!/usr/bin/env python3
"""Word-level recall of ferrocrawl's text of a document against pdftotext's.

    python3 benches/word_recall.py OURS.md THEIRS.txt

Both texts are lower-cased and split into words (letters and digits); Markdown markers in
ours are ignored by the same split. Recall = words of theirs found in ours (as a multiset)
divided by all words of theirs. Prints recall and both word counts.
"""
import re
import sys
from collections import Counter


def words(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return Counter(re.findall(r"[^\W_]+", f.read().lower()))


ours, theirs = words(sys.argv[1]), words(sys.argv[2])
found = sum(min(n, ours[w]) for w, n in theirs.items())
total = sum(theirs.values())
print(f"recall={found / max(total, 1):.4f} ours_words={sum(ours.values())} pdftotext_words={total}")
