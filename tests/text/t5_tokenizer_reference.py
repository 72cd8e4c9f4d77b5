"""The Python side of //tests/text:t5_tokenizer_parity_test.

Runs the REAL slow T5Tokenizer of transformers (4.41.2 and 4.38.2, pinned in
third_party/python) and Debian's python3-sentencepiece 0.1.97 on a corpus of fixed and seeded
random texts (Unicode letters, CJK, emoji, runs of ASCII and Unicode whitespace, T5's special
tokens and sentinels written in the text), and compares loom's T5Tokenizer with them.

usage:
  t5_tokenizer_reference.py write SPIECE_MODEL DIR
      (transformers 4.41) writes DIR/cases.json, DIR/expected.json and HF's saved folder
      DIR/hf_folder (T5Tokenizer(spiece.model, model_max_length=64).save_pretrained).
  t5_tokenizer_reference.py compare DIR
      (any transformers version) recomputes the expectations with this version's T5Tokenizer
      loaded from DIR/hf_folder and requires them equal to expected.json (so 4.38 and 4.41
      agree), then requires loom's results (DIR/loom.json, written by t5_tokenizer_parity_cli)
      equal to them, then loads loom's saved folder DIR/loom_folder with T5Tokenizer.from_pretrained
      and requires the same ids, and requires loom_folder's files byte-identical to hf_folder's
      when run under 4.41.
Exits 1 listing every mismatch.
"""

import json
import os
import random
import sys
import warnings

import sentencepiece as spm
import transformers
from transformers import T5Tokenizer

transformers.logging.set_verbosity_error()
warnings.simplefilter("ignore")

FIXED = [
    "", " ", "   ", "Hello world", "Hello  world", "  leading and trailing  ",
    "tabs\tand\nnewlines\r\n", "Casa este mică.", "Straße über größe", "ünïcödé ÅÇ",
    "\U0001F600 emoji \U0001F44D\U0001F3FD", "日本語のテキスト", "full\u3000width\u2003space",
    "x\u00a0nbsp", "<extra_id_0>", "a<extra_id_1>b", "a <extra_id_2>  b", " <extra_id_99> ",
    "<extra_id_100>", "<extra_id_05>", "</s>", "text </s> more", "<pad><unk>",
    "<extra_id_0><extra_id_1>", "<extra_id_1 0>", "<extra_id_10>x<extra_id_1>",
    "translate English to Romanian: The house is small.", "it isn't , he 's here ?",
    "ﬁ ligature ① circled Ⅻ roman", "e\u0301 combining", "\u200b zero width",
]

POOL = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789.,?!'\"-()") + [" "] * 12 +
    ["ă", "î", "ș", "ț", "ä", "ö", "ü", "ß", "é", "ñ", "日", "本", "\U0001F600", "ﬁ", "①"] +
    ["\t", "\n", "\u00a0", "\u3000", "\u2003", "  ", "   "] +
    ["<extra_id_0>", "<extra_id_7>", "<extra_id_42>", "</s>", "<pad>", "<unk>", "<extra_id_"] +
    ["casa ", "este ", "the ", "house ", "straße "]
)

MODEL_MAX_LENGTH = 64


def corpus():
    rng = random.Random(20261128)
    texts = list(FIXED)
    for _ in range(300):
        texts.append("".join(rng.choice(POOL) for _ in range(rng.randint(0, 30))))
    return texts


def random_id_lists(size):
    rng = random.Random(7)
    lists = [[], [1], [0, 0], [size - 1, 5, size - 2]]
    for _ in range(200):
        lists.append([rng.randrange(size) for _ in range(rng.randint(0, 25))])
    return lists


def decodes(tok, ids):
    out = {}
    for skip in (False, True):
        for clean in (False, True):
            out[f"skip={skip},clean={clean}"] = tok.decode(
                ids, skip_special_tokens=skip, clean_up_tokenization_spaces=clean)
    return out


def expectations(tok, sp, texts, id_lists):
    """What HF's T5Tokenizer (and SentencePiece itself) give for every case."""
    added = set(tok.all_special_tokens)
    result = {"encode": [], "decode": []}
    for text in texts:
        ids = tok(text).input_ids
        entry = {
            "tokens": tok.tokenize(text),
            "input_ids": ids,
            "truncated": tok(text, max_length=8, truncation=True).input_ids,
            "no_special": tok(text, add_special_tokens=False).input_ids,
            "decoded": decodes(tok, ids),
        }
        if not any(a in text for a in added):
            # Without added tokens, HF's ids are SentencePiece's own.
            entry["sentencepiece_ids"] = sp.encode(text)
        result["encode"].append(entry)
    for ids in id_lists:
        result["decode"].append(decodes(tok, ids))
    return result


def write(spiece, out_dir):
    texts = corpus()
    tok = T5Tokenizer(spiece, model_max_length=MODEL_MAX_LENGTH, legacy=True)
    tok.save_pretrained(os.path.join(out_dir, "hf_folder"))
    id_lists = random_id_lists(len(tok))
    with open(os.path.join(out_dir, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": texts, "id_lists": id_lists}, f, ensure_ascii=False)
    sp = spm.SentencePieceProcessor(model_file=spiece)
    with open(os.path.join(out_dir, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expectations(tok, sp, texts, id_lists), f, ensure_ascii=False)


def diff(label, want, got, errors):
    if want != got:
        errors.append(f"{label}:\n  expected {want!r}\n  got      {got!r}")


def compare_results(label, want, got, texts, errors):
    for i, (w, g) in enumerate(zip(want["encode"], got["encode"])):
        for key in w:
            if key != "sentencepiece_ids":
                diff(f"{label} text {i} {texts[i]!r} {key}", w[key], g.get(key), errors)
        if "sentencepiece_ids" in w:
            diff(f"{label} text {i} {texts[i]!r} vs SentencePiece's own ids",
                 w["sentencepiece_ids"], g.get("no_special"), errors)
    for i, (w, g) in enumerate(zip(want["decode"], got["decode"])):
        diff(f"{label} id list {i}", w, g, errors)
    if len(want["encode"]) != len(got["encode"]) or len(want["decode"]) != len(got["decode"]):
        errors.append(f"{label}: case counts differ")


def compare(out_dir):
    with open(os.path.join(out_dir, "cases.json"), encoding="utf-8") as f:
        cases = json.load(f)
    with open(os.path.join(out_dir, "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    with open(os.path.join(out_dir, "loom.json"), encoding="utf-8") as f:
        loom = json.load(f)
    texts, id_lists = cases["texts"], cases["id_lists"]
    hf_dir, loom_dir = (os.path.join(out_dir, d) for d in ("hf_folder", "loom_folder"))
    sp = spm.SentencePieceProcessor(model_file=os.path.join(hf_dir, "spiece.model"))
    version = transformers.__version__
    errors = []
    mine = expectations(T5Tokenizer.from_pretrained(hf_dir), sp, texts, id_lists)
    compare_results(f"transformers {version} vs 4.41", expected, mine, texts, errors)
    compare_results(f"loom vs transformers {version}", mine, loom, texts, errors)
    from_loom = expectations(T5Tokenizer.from_pretrained(loom_dir), sp, texts, id_lists)
    compare_results(f"loom's folder in transformers {version}", mine, from_loom, texts, errors)
    if version.startswith("4.41."):
        for name in sorted(os.listdir(hf_dir)):
            with open(os.path.join(hf_dir, name), "rb") as a, \
                    open(os.path.join(loom_dir, name), "rb") as b:
                want, got = a.read(), b.read()
                if want != got:
                    at = next((i for i, (x, y) in enumerate(zip(want, got)) if x != y),
                              min(len(want), len(got)))
                    errors.append(f"{name} as saved by loom differs from HF's at byte {at}: "
                                  f"HF {want[at:at + 40]!r}, loom {got[at:at + 40]!r}")
    if errors:
        print(f"FAIL: {len(errors)} mismatches", *errors[:40], sep="\n", file=sys.stderr)
        sys.exit(1)
    checked = sum("sentencepiece_ids" in e for e in mine["encode"])
    print(f"transformers {version}: {len(texts)} texts ({checked} also against SentencePiece), "
          f"{len(id_lists)} id lists x 4 decode settings, loom's folder: identical")


def main():
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "compare":
        compare(sys.argv[2])
    else:
        sys.exit(f"unknown verb {sys.argv[1]}")


if __name__ == "__main__":
    main()
