"""The counter-based draws of ``polars_calib._core.draws``, written again in numpy.

An independent reading of the documented algorithm: unsigned 64-bit arithmetic
(products of two 32-bit words fit), plain shifts, no Polars. Spark, Dask or SQL
implementations must agree with these to the bit.
"""

import math
from fractions import Fraction

import numpy as np

MASK = np.uint64(0xFFFFFFFF)


def mix(x):
    """lowbias32 on uint64 arrays holding 32-bit words."""
    x = np.asarray(x, dtype=np.uint64)
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(0x7FEB352D)) & MASK
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(0x846CA68B)) & MASK
    return x ^ (x >> np.uint64(16))


def words(ids, replicate, seed):
    """The 32-bit word of `replicate` for each row identity (int64) and a seed."""
    ids = np.asarray(ids, dtype=np.int64).view(np.uint64)
    lo, hi = ids & MASK, ids >> np.uint64(32)
    s1 = mix(np.uint64(seed) ^ np.uint64(0x9E3779B9))
    s2 = mix(s1 ^ np.uint64(0x85EBCA6B))
    h1 = mix(mix(lo ^ s1) ^ hi)
    h2 = mix(mix(hi ^ s2) ^ lo)
    step = np.uint64((replicate * 0x9E3779B9) % 2**32)
    return (mix((h1 + step) & MASK) ^ h2).astype(np.int64)


def poisson_thresholds(count=12):
    """floor(2**32 P(K < j)) for K ~ Poisson(1), j = 1..count, from exact rationals."""
    e_inv = Fraction(3678794411714423215955237701614608674458, 10**40)
    total, out = Fraction(0), []
    for j in range(1, count + 1):
        total += Fraction(1, math.factorial(j - 1))
        out.append(math.floor(e_inv * total * 2**32))
    return np.array(out, dtype=np.int64)


def poisson(word):
    """Poisson(1) draws by inversion of the integer thresholds."""
    return np.searchsorted(poisson_thresholds(), word, side="right")


def bernoulli(word, p):
    """Bernoulli(p) draws: word < p * 2**32."""
    return (np.asarray(word, dtype=np.float64) < np.asarray(p) * 2.0**32).astype(np.float64)
