"""The Python side of //tests/text:llama_tokenizer_parity_test.

Runs the REAL slow LlamaTokenizer of transformers 4.41.2 (over Debian's / the pinned
sentencepiece 0.1.97) on a corpus of fixed and seeded random texts (Unicode letters, CJK,
emoji, digits, runs of ASCII and Unicode whitespace, the special tokens and "▁" written in the
text) and compares loom's LlamaTokenizer with it, in legacy and non-legacy mode.

usage:
  llama_tokenizer_reference.py write DIR
      writes DIR/cases.json: {"texts": [...]}.
  llama_tokenizer_reference.py compare DIR
      for MODE in legacy, nonlegacy: loads loom's saved folder DIR/loom_<MODE> (written by
      llama_tokenizer_parity_cli with a tokenizer.model loom trained in Llama's layout) with
      LlamaTokenizer.from_pretrained and requires, for every text, tokenize(), the ids of
      __call__ (bos added), and decode() with and without skip_special_tokens to equal loom's
      DIR/loom_<MODE>.json; requires the model's unk/bos/eos ids to be 0/1/2 and pieces
      <0x00>..<0xFF> (byte fallback) to exist.
Exits 1 listing every mismatch.
"""

import json
import os
import random
import sys
import warnings

import transformers
from transformers import LlamaTokenizer

transformers.logging.set_verbosity_error()
warnings.simplefilter("ignore")

FIXED = [
    "", " ", "   ", "Hello world", "Hello  world", "  leading and trailing  ",
    "tabs\tand\nnewlines\r\n", "Casa este mică.", "Straße über größe", "ünïcödé ÅÇ",
    "\U0001F600 emoji \U0001F44D\U0001F3FD", "日本語のテキスト", "full\u3000width\u2003space",
    "x\u00a0nbsp", "digits 12345 and 3.14159", "<s>", "</s>", "<unk>", "a<s>b", "text </s> more",
    "<s> Hello", "Hello <s>", "▁already▁marked", " ▁mixed ▁", "it isn't , he 's here ?",
    "ﬁ ligature ① circled Ⅻ roman", "e\u0301 combining", "\u200b zero width", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
]

POOL = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789.,?!'\"-()") + [" "] * 12 +
    ["ă", "î", "ș", "ä", "ö", "ß", "é", "ñ", "日", "本", "\U0001F600", "ﬁ", "①", "▁"] +
    ["\t", "\n", "\u00a0", "\u3000", "  ", "   "] + ["<s>", "</s>", "<unk>", "<s", "s>"]
)


def corpus():
    rng = random.Random(20261129)
    texts = list(FIXED)
    for _ in range(300):
        texts.append("".join(rng.choice(POOL) for _ in range(rng.randint(1, 40))))
    return texts


def results(tok, texts):
    out = []
    for text in texts:
        ids = tok(text)["input_ids"]
        out.append({"tokens": tok.tokenize(text), "input_ids": ids,
                    "decoded": tok.decode(ids),
                    "decoded_skip": tok.decode(ids, skip_special_tokens=True)})
    return out


def compare(d):
    with open(os.path.join(d, "cases.json")) as f:
        texts = json.load(f)["texts"]
    errors = []
    for mode in ("legacy", "nonlegacy"):
        folder = os.path.join(d, f"loom_{mode}")
        tok = LlamaTokenizer.from_pretrained(folder)
        if tok.legacy != (mode == "legacy"):
            errors.append(f"{folder}: legacy is {tok.legacy}")
        sp = tok.sp_model
        if (sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id()) != (0, 1, 2, -1):
            errors.append(f"{folder}: unk/bos/eos/pad ids {sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id()}")
        if sp.piece_to_id("<0x41>") == sp.unk_id():
            errors.append(f"{folder}: no byte-fallback pieces")
        with open(os.path.join(d, f"loom_{mode}.json")) as f:
            loom = json.load(f)
        want = results(tok, texts)
        for text, w, got in zip(texts, want, loom):
            for key in w:
                if w[key] != got[key]:
                    errors.append(f"{mode} {text!r} {key}: loom {got[key]!r}, HF {w[key]!r}")
    if errors:
        print("FAIL:\n  " + "\n  ".join(errors[:40]), file=sys.stderr)
        sys.exit(1)
    print(f"llama tokenizer parity: {len(texts)} texts x 2 modes match transformers "
          f"{transformers.__version__}")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "compare"):
        sys.exit("usage: llama_tokenizer_reference.py write|compare DIR")
    if sys.argv[1] == "write":
        with open(os.path.join(sys.argv[2], "cases.json"), "w") as f:
            json.dump({"texts": corpus()}, f, ensure_ascii=False)
    else:
        compare(sys.argv[2])


if __name__ == "__main__":
    main()
