"""The Python side of //tests/text:bpe_tokenizer_parity_test.

Trains two byte-level BPE tokenizers with the REAL HF `tokenizers` 0.19.1 (pinned in
third_party/python, the library transformers' fast tokenizers run on) — GPT-2's layout
(ByteLevel pre-tokenizer with its regex, ByteLevel decoder) and Llama 3's (a Split with Llama 3's
regex, then ByteLevel without regex; ignore_merges; a "<|begin_of_text|>" template) — and holds
loom's ByteLevelBpeTokenizer to them on a corpus of fixed and seeded random texts (Unicode
letters and digits, CJK, emoji, contractions in both cases, runs of ASCII and Unicode whitespace
including \\v, \\x85 and NBSP, \\r\\n, the added tokens written in the text).

usage:
  bpe_tokenizer_reference.py write DIR     DIR/<layout>/tokenizer.json (+ tokenizer_config.json)
                                           and DIR/cases.json
  bpe_tokenizer_reference.py compare DIR   requires DIR/loom_<layout>.json (written by
                                           bpe_tokenizer_parity_cli) to hold tokenizers' tokens,
                                           ids (with special tokens) and decodes (with and
                                           without skip_special_tokens) for every text
Exits 1 listing the mismatches.
"""

import json
import os
import random
import sys

import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")

FIXED = [
    "", " ", "   ", "Hello world", "Hello  world", "  leading and trailing  ", "tabs\tand\nnewlines\r\n",
    "I'm sure it's fine, we'll see; THEY'RE HERE and I'VE been", "Casa este mică.", "Straße über größe",
    "\U0001F600 emoji \U0001F44D\U0001F3FD", "日本語のテキスト", "full\u3000width\u2003space", "x\u00a0nbsp",
    "vertical\vtab", "next\x85line", "digits 1234567 and 3.14159", "<|endoftext|>", "a<|endoftext|>b",
    "x <tool> y", "x  <tool>y", "<|begin_of_text|>hi", "e\u0301 combining", "\u200b zero width", "𝔘𝔫𝔦",
    "code: def f(x):\n    return x**2\n\n\n", "!!!???...", "\n\n\n", "a\r\nb\r\n\r\nc",
]

POOL = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789.,?!'\"-()") + [" "] * 12 +
        ["ă", "î", "ș", "ä", "ö", "ß", "é", "ñ", "日", "本", "\U0001F600", "①", "٣", "'s", "'LL"] +
        ["\t", "\n", "\r\n", "\u00a0", "\u3000", "  ", "   ", "\v", "\x85"] +
        ["<|endoftext|>", "<tool>", "<|end"])


def corpus():
    rng = random.Random(20261129)
    texts = list(FIXED)
    for _ in range(300):
        texts.append("".join(rng.choice(POOL) for _ in range(rng.randint(1, 40))))
    return texts


def training_text():
    rng = random.Random(7)
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "it's", "we'll",
             "Straße", "über", "日本語", "12345", "3.14", "hello", "world", "code", "return", "x**2"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) for _ in range(3000)]


def gpt2_style():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer)
    tok.add_tokens([AddedToken("<tool>", lstrip=True, rstrip=False)])
    return tok


def llama3_style():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<|begin_of_text|>", "<|end_of_text|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer)
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    return tok


def write(d):
    for name, make in (("gpt2", gpt2_style), ("llama3", llama3_style)):
        folder = os.path.join(d, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "tokenizer.json")
        make().save(path)
        if name == "llama3":  # Llama 3's model keeps whole words that are in the vocabulary
            with open(path) as f:
                j = json.load(f)
            j["model"]["ignore_merges"] = True
            with open(path, "w") as f:
                json.dump(j, f, ensure_ascii=False, indent=2)
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump({"model_max_length": 4096, "clean_up_tokenization_spaces": False}, f)
    with open(os.path.join(d, "cases.json"), "w") as f:
        json.dump({"texts": corpus()}, f, ensure_ascii=False)


def compare(d):
    with open(os.path.join(d, "cases.json")) as f:
        texts = json.load(f)["texts"]
    errors, checked = [], 0
    for name in ("gpt2", "llama3"):
        tok = Tokenizer.from_file(os.path.join(d, name, "tokenizer.json"))
        with open(os.path.join(d, f"loom_{name}.json")) as f:
            loom = json.load(f)
        for text, got in zip(texts, loom):
            enc = tok.encode(text)
            want = {"tokens": tok.encode(text, add_special_tokens=False).tokens, "input_ids": enc.ids,
                    "decoded": tok.decode(enc.ids, skip_special_tokens=False),
                    "decoded_skip": tok.decode(enc.ids, skip_special_tokens=True)}
            for key in want:
                checked += 1
                if want[key] != got[key]:
                    errors.append(f"{name} {text!r} {key}: loom {got[key]!r}, tokenizers {want[key]!r}")
    if errors:
        print("FAIL:\n  " + "\n  ".join(errors[:30]), file=sys.stderr)
        sys.exit(1)
    print(f"bpe tokenizer parity: {len(texts)} texts x 2 layouts ({checked} values) match "
          f"tokenizers {tokenizers.__version__}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "compare"):
        sys.exit("usage: bpe_tokenizer_reference.py write|compare DIR")
    (write if sys.argv[1] == "write" else compare)(sys.argv[2])
