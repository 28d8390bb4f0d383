"""What the tokenizer golden generators share: reproducible random test strings.

A string is 1 to 30 chunks, each an item of a random pool repeated 1 to 3 times, so that every
pool's characters meet every other's (a combining mark after a CJK character, an emoji inside
a word). The same pools and seed give the same strings on every machine and Python version
(random.Random is specified to be stable for a given seed).
"""
import random


def random_strings(pools, count, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        chunks = []
        for _ in range(rng.randint(1, 30)):
            pool = pools[rng.randrange(len(pools))]
            chunks.append(pool[rng.randrange(len(pool))] * rng.choice([1, 1, 1, 2, 3]))
        out.append("".join(chunks))
    return out
