"""The Python side of //tests/text:sacrebleu_parity_test: the REAL sacreBLEU 2.4.3 (pinned in
third_party/python/interop-sacrebleu-2.4.txt) on fixed and seeded random corpora.

usage:
  sacrebleu_reference.py write DIR     writes DIR/cases.json (corpora) and DIR/expected.json
                                       (sacrebleu.corpus_bleu(...).score, its counts, and
                                       Tokenizer13a of every line)
  sacrebleu_reference.py compare DIR   requires DIR/loom.json (sacrebleu_parity_cli) to hold
                                       the same tokenizations and counts, and scores within
                                       1e-9 (they print the same to 2 decimals); exits 1 listing
                                       every mismatch
"""

import json
import os
import random
import sys

import sacrebleu
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

FIXED_LINES = [
    "Hello, world!", "3.14 and 1,000.5 items.", "end.", "a-b 1-2 --", "&quot;x&quot; &amp; &lt;y&gt;",
    "don't stop", "x/y {z} [w] (v) <u>", "tab\there  ", "ünï,cöde.", "Ce n'est pas ça...",
    "line one-\nline two\nthree", "<skipped> gone", "1.,2 .3 4,", "日本語、テキスト。", "",
    "   ", "$100 @home #tag %50 ^up ~ `q` |p|", "Mr. Smith's 2-3 cats.",
]
POOL = ("the a cat dog sat on mat house casa este mică verde das haus ist klein , . ! ? ; : "
        "' \" - ( ) 1 2 3 3.5 1,000 & &amp; é ü ß 日本").split() + ["  ", "\t"]


def random_line(rng):
    return " ".join(rng.choice(POOL) for _ in range(rng.randint(0, 14)))


def corpora():
    rng = random.Random(20261129)
    out = [{"hyps": ["the cat sat on the mat"], "refs": [["the cat sat on the mat"]]},
           {"hyps": FIXED_LINES, "refs": [list(reversed(FIXED_LINES))]}]
    for k in range(40):
        n = rng.randint(1, 12)
        n_refs = 1 + k % 3
        hyps = [random_line(rng) for _ in range(n)]
        # References share words with the hypotheses so that scores are not all 0.
        refs = [[h if rng.random() < 0.3 else random_line(rng) for h in hyps]
                for _ in range(n_refs)]
        out.append({"hyps": hyps, "refs": refs})
    return out


def expected(cases):
    tok = Tokenizer13a()
    result = []
    for case in cases:
        bleu = sacrebleu.corpus_bleu(case["hyps"], case["refs"])
        lines = case["hyps"] + [r for stream in case["refs"] for r in stream]
        result.append({"score": bleu.score, "counts": list(bleu.counts),
                       "totals": list(bleu.totals), "sys_len": bleu.sys_len,
                       "ref_len": bleu.ref_len, "tokenized": [tok(l.rstrip()) for l in lines]})
    return result


def write(out_dir):
    cases = corpora()
    with open(os.path.join(out_dir, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)
    with open(os.path.join(out_dir, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected(cases), f, ensure_ascii=False)


def compare(out_dir):
    with open(os.path.join(out_dir, "expected.json"), encoding="utf-8") as f:
        want = json.load(f)
    with open(os.path.join(out_dir, "loom.json"), encoding="utf-8") as f:
        got = json.load(f)
    errors = []
    if len(want) != len(got):
        errors.append(f"{len(want)} corpora expected, loom wrote {len(got)}")
    worst = 0.0
    for i, (w, g) in enumerate(zip(want, got)):
        for key in ("counts", "totals", "sys_len", "ref_len", "tokenized"):
            if w[key] != g[key]:
                errors.append(f"corpus {i} {key}: sacrebleu {w[key]!r}, loom {g[key]!r}")
        worst = max(worst, abs(w["score"] - g["score"]))
        if abs(w["score"] - g["score"]) > 1e-9:
            errors.append(f"corpus {i} score: sacrebleu {w['score']!r}, loom {g['score']!r}")
    if errors:
        print(f"FAIL: {len(errors)} mismatches", *errors[:30], sep="\n", file=sys.stderr)
        sys.exit(1)
    print(f"sacrebleu {sacrebleu.__version__}: {len(want)} corpora, scores within {worst:.1e}, "
          "tokenizations and counts identical")


if __name__ == "__main__":
    {"write": write, "compare": compare}[sys.argv[1]](sys.argv[2])
