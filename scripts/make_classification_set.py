#!/usr/bin/env python3
"""Writes examples/data/classification/: tiny labelled sets for the sequence-classification tests.

  sentiment/{train,valid}.jsonl   one text, label 0 (negative) or 1 (positive), SST-2 style
  pair/{train,valid}.tsv          question + sentence, label "entailment" / "not_entailment"
                                  (QNLI style, with a header row)

The texts are made from templates and word lists with a fixed seed: a sentence's label is decided
by the praise or blame words it holds, among words that carry no label, so a small encoder can
learn it in a few dozen steps, and chance is 50%. Deterministic: the same files every run.

  python3 scripts/make_classification_set.py
"""

import json
import os
import random

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "examples", "data", "classification")

GOOD = ["wonderful", "brilliant", "delightful", "moving", "superb", "charming", "gripping",
        "beautiful", "clever", "joyful"]
BAD = ["dreadful", "boring", "clumsy", "tedious", "awful", "dull", "painful", "messy", "stale",
       "hollow"]
SUBJECTS = ["the play", "this film", "the second act", "her performance", "the music",
            "the ending", "the staging", "his speech", "the story", "the chorus"]
FILLERS = ["truly", "at times", "on the whole", "for most of the night", "in the end",
           "as expected", "to my surprise", "again and again"]
TEMPLATES = ["{s} was {f} {w}.", "{s} felt {w}, {f}.", "I found {s} {w} {f}.",
             "{f}, {s} is {w}.", "{s} seemed {w} and {w2}."]


def sentence(rng, words):
    w, w2 = rng.sample(words, 2)
    template = rng.choice(TEMPLATES)
    text = template.format(s=rng.choice(SUBJECTS), f=rng.choice(FILLERS), w=w, w2=w2)
    return text[0].upper() + text[1:]


def sentiment(rng, n):
    rows = []
    for _ in range(n):
        label = rng.randrange(2)
        rows.append({"text": sentence(rng, GOOD if label else BAD), "label": label})
    return rows


def pairs(rng, n):
    rows = []
    for _ in range(n):
        label = rng.randrange(2)
        subject = rng.choice(SUBJECTS)
        praised = rng.randrange(2)
        words = GOOD if praised else BAD
        question = f"Was {subject} {'good' if praised == label else 'bad'}?"
        text = f"{subject} was {rng.choice(words)} {rng.choice(FILLERS)}."
        rows.append((question, text[0].upper() + text[1:],
                     "entailment" if label else "not_entailment"))
    return rows


def main():
    rng = random.Random(20261126)
    os.makedirs(os.path.join(OUT, "sentiment"), exist_ok=True)
    os.makedirs(os.path.join(OUT, "pair"), exist_ok=True)
    for split, n in (("train", 512), ("valid", 128)):
        with open(os.path.join(OUT, "sentiment", f"{split}.jsonl"), "w") as f:
            for row in sentiment(rng, n):
                f.write(json.dumps(row) + "\n")
        with open(os.path.join(OUT, "pair", f"{split}.tsv"), "w") as f:
            f.write("index\tquestion\tsentence\tlabel\n")
            for i, (question, text, label) in enumerate(pairs(rng, n // 2)):
                f.write(f"{i}\t{question}\t{text}\t{label}\n")


if __name__ == "__main__":
    main()
