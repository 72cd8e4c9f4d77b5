"""Regenerates text/testdata/spiece.model, the small SentencePiece model loom's T5 tokenizer
tests use (a stand-in for t5-small's spiece.model, which loom never downloads).

A unigram model with T5's id layout (pad 0, eos 1, unk 2, no bos) and normalisation
(nmt_nfkc, dummy prefix, whitespace collapsed), trained with Debian's python3-sentencepiece
0.1.97 on a generated English / Romanian / German corpus with accents, digits and punctuation.

usage: python3 text/testdata/make_spiece.py text/testdata/spiece.model
"""

import io
import random
import sys

import sentencepiece as spm

WORDS = (
    "the a house is small green red blue cat dog runs sleeps on under table chair we you they "
    "read write books today tomorrow yesterday city river mountain train station ticket "
    "casa este mică verde roșu albastru pisica câinele aleargă doarme pe sub masă scaun noi "
    "voi citesc scriu cărți astăzi mâine ieri oraș râu munte tren gară bilet "
    "das haus ist klein grün rot blau katze hund läuft schläft auf unter tisch stuhl wir "
    "über straße größe müde schön"
).split()
PUNCT = [".", ",", "?", "!", ";", ":", "'s", "n't", "(", ")", '"', "-"]


def corpus(seed, lines):
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), str(rng.randint(0, 2000)))
        if rng.random() < 0.5:
            words[0] = words[0].capitalize()
        out.append(" ".join(words) + rng.choice(PUNCT))
    return out


def main():
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus(7, 3000)),
        model_writer=model,
        model_type="unigram",
        vocab_size=300,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        character_coverage=1.0,
        normalization_rule_name="nmt_nfkc",
        num_threads=1,
        seed_sentencepiece_size=100000,
        shuffle_input_sentence=False,
        minloglevel=2,
    )
    with open(sys.argv[1], "wb") as f:
        f.write(model.getvalue())


if __name__ == "__main__":
    main()
