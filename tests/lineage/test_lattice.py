"""A fine dim's raw values on a decimal lattice or as offsets of their bits
(lineage/lattice.py): every value comes back bit for bit (-0.0 as 0.0), from numpy and from
the kernels' decoder, or the shard keeps float64."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from brushfire.engine import kernels as K
from brushfire.lineage import lattice
from brushfire.lineage.layout import Dim
from brushfire.lineage.store import base_table, kernel_arrays

RNG = np.random.default_rng(3)
N = 5000


def buckets(x: np.ndarray, nedges: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(edges, keys, nkeys) as a fine dim cuts x: quantile edges, edges[0] = -inf,
    NaN in the no-value key."""
    ok = x[np.isfinite(x)]
    edges = np.unique(np.quantile(ok, np.linspace(0, 1, nedges)[1:-1])) if len(ok) else np.zeros(0)
    edges = np.concatenate([[-np.inf], edges])
    keys = np.searchsorted(edges, x, "right") - 1
    keys[np.isnan(x)] = len(edges)
    return edges, keys, len(edges)


def with_nan(x: np.ndarray, share: float = 0.05) -> np.ndarray:
    x = x.astype(np.float64)
    x[RNG.random(len(x)) < share] = np.nan
    return x


CODED = {  # values on a lattice, and the step encode should find
    "integers": (with_nan(RNG.integers(-5000, 2_000_000, N)), 0),
    "thousands": (RNG.integers(-50, 50, N) * 1000.0, 3),
    "cents": (with_nan(RNG.integers(0, 10**9, N) / 100), -2),
    "dollars in millions": (RNG.integers(0, 400_000_000, N) / 1e6, -6),
    "epoch milliseconds as microseconds": (
        with_nan(RNG.integers(946_684_800_000, 1_262_304_000_000, N) * 1000.0), 3),  # 2000-2009
    "a decimal": (np.round(RNG.normal(10, 30, N), 1), -1),
    "one value": (np.full(N, 7.25), -2),
    "minus zero": (np.concatenate([RNG.integers(0, 100, N - 1).astype(float), [-0.0]]), 0),
}
BITS = {  # values off every decimal lattice, as offsets of their ordered bits: the kind
    "arbitrary doubles in buckets": (RNG.uniform(100, 200, N), lattice.ULP48),
    "arbitrary doubles in narrow buckets": (RNG.uniform(100, 101, N), lattice.ULP40),
    "arbitrary doubles in narrower buckets": (RNG.uniform(100, 100.001, N), lattice.ULP32),
    "float32 values": (RNG.normal(0, 30, N).astype(np.float32), lattice.ULP32),
    "negative float32 values": (-RNG.gamma(2, 30, N).astype(np.float32), lattice.ULP16),
    "a sum of thirds": (10**6 + RNG.integers(0, 10**4, N) / 3, lattice.ULP40),
    "an infinity (an exception)": (np.concatenate([RNG.uniform(100, 101, N - 1), [np.inf]]), lattice.ULP40),
    "past 2^52": (RNG.integers(0, 100, N).astype(float) * 256 + 2.0**60, lattice.ULP16),
}
FLOATS = {  # values whose buckets hold every magnitude: kept as float64
    "every magnitude around zero": RNG.choice([-1.0, 1.0], N) * 10.0 ** RNG.uniform(-300, 300, N),
    "a NaN among values": np.concatenate([RNG.uniform(100, 101, N - 1), [np.nan]]),
}


@pytest.mark.parametrize("name", CODED)
def test_values_on_a_lattice_come_back_bit_for_bit(name):
    x, step = CODED[name]
    edges, keys, nkeys = buckets(x, 2000)
    coded = lattice.encode(x, keys, nkeys, edges)
    assert coded is not None and coded.j == step
    got = lattice.decode(coded, keys, nkeys, edges)
    has = keys < nkeys
    assert np.array_equal(got[has], x[has])  # (and bit for bit but for -0.0, now 0.0:)
    assert np.array_equal(got[has].view(np.int64), (x[has] + 0.0).view(np.int64))
    assert np.isnan(got[~has]).all()


@pytest.mark.parametrize("name", BITS)
def test_values_off_every_lattice_come_back_from_their_bits(name):
    x, kind = BITS[name]
    x = np.asarray(x, np.float64)
    edges, keys, nkeys = buckets(x, 2000)
    coded = lattice.encode(x, keys, nkeys, edges)
    assert coded is not None and coded.kind == kind and coded.j >= lattice.ULP
    got = lattice.decode(coded, keys, nkeys, edges)
    assert np.array_equal(got.view(np.int64), x.view(np.int64))


def test_float32_values_leave_their_low_bits_zero():
    x = RNG.normal(0, 30, N).astype(np.float32).astype(np.float64)
    edges, keys, nkeys = buckets(x, 2000)
    assert lattice.encode(x, keys, nkeys, edges).j == lattice.ULP + 29  # 52 - 23 mantissa bits


def test_ordered_bits_order_as_the_values():
    x = np.sort(np.concatenate([RNG.normal(0, 1, 1000), 10.0 ** RNG.uniform(-300, 300, 1000),
                                -(10.0 ** RNG.uniform(-300, 300, 1000)), [0.0, -np.inf, np.inf]]))
    u = lattice.ordered(x)
    assert (np.diff(u) >= 0).all() and (np.diff(u)[np.diff(x) > 0] > 0).all()
    assert np.array_equal(lattice.from_ordered(u).view(np.int64), x.view(np.int64))
    assert lattice.ordered(np.array([-0.0]))[0] == 0


@pytest.mark.parametrize("name", FLOATS)
def test_values_off_every_lattice_and_bits_offset_stay_float64(name):
    x = FLOATS[name]
    edges, keys, nkeys = buckets(x, 2000)
    keys[np.isnan(x)] = 0  # (a NaN with a key: as no capture keys it, refused)
    assert lattice.encode(x, keys, nkeys, edges) is None


def test_offsets_take_the_narrowest_type_with_at_most_one_in_a_hundred_exceptions():
    """Whole numbers in buckets 1,000 wide take uint16 offsets; one bucket 2^40 wide with
    a few rows makes those rows exceptions (values kept beside their rows); more of them
    than 1 % of the rows, uint32; past 2^32 in more than 1 %, 48-bit offsets of their bits;
    past 2^60 (their bits, and the smallest values', too far apart in more than 10 %),
    float64."""
    def cut(x, width):
        edges = np.concatenate([[-np.inf], np.arange(1, 200) * width])
        return edges, np.searchsorted(edges, x, "right") - 1, len(edges)

    x = RNG.integers(0, 199_000, N).astype(np.float64)
    edges, keys, nkeys = cut(x, 1000.0)
    assert lattice.encode(x, keys, nkeys, edges).kind == lattice.LAT16
    for rows, far, kind in ((20, 2**40, lattice.LAT16), (400, 2**20, lattice.LAT32), (400, 2**40, lattice.ULP48),
                            (400, 2**60, None)):
        y = x.copy()
        wide = RNG.choice(N, rows, replace=False)
        y[wide] = 199_000 + RNG.integers(0, far, rows)  # the last bucket
        _, keys, _ = cut(y, 1000.0)
        coded = lattice.encode(y, keys, nkeys, edges)
        if kind is None:
            assert coded is None
            continue
        assert coded.kind == kind
        assert sorted(coded.xrows.tolist()) == coded.xrows.tolist()
        assert np.array_equal(lattice.decode(coded, keys, nkeys, edges), y)


@pytest.mark.parametrize("share, kind", [(0.0, lattice.ULP40), (0.06, lattice.ULP40), (0.09, lattice.ULP48)])
def test_bits_offsets_take_the_fewest_bytes_with_their_exceptions(share, kind):
    """Doubles in narrow buckets take 40-bit offsets; a share of rows in a bucket 2^45 ulps
    wide needs 48: kept aside as exceptions (12 bytes each) while that takes fewer bytes
    than a sixth byte for every row, i.e. under 1/12 of the rows."""
    wide = int(share * N)
    x = np.concatenate([RNG.uniform(100, 101, N - wide), RNG.uniform(101, 101.5, wide)])
    edges = np.concatenate([[-np.inf], np.quantile(x[: N - wide], np.linspace(0, 1, 2000)[1:-1]), [101.0]])
    keys = np.searchsorted(edges, x, "right") - 1
    coded = lattice.encode(x, keys, len(edges), edges)
    assert coded.kind == kind
    assert 0.9 * wide <= len(coded.xrows) <= wide if kind == lattice.ULP40 else not len(coded.xrows)
    assert np.array_equal(lattice.decode(coded, keys, len(edges), edges), x)


def test_a_shard_of_no_values_is_coded():
    x = np.full(10, np.nan)
    coded = lattice.encode(x, np.full(10, 5), 5, np.array([-np.inf, 1.0, 2, 3, 4]))
    assert not coded.off.any()
    assert np.isnan(lattice.decode(coded, np.full(10, 5), 5, np.array([-np.inf, 1.0, 2, 3, 4]))).all()
    far = np.array([-np.inf, 2.0**62, 2.0**63])  # (int64 extremes: no step's bases are exact)
    coded = lattice.encode(x, np.full(10, 3), 3, far)
    assert coded is None or lattice.bases(far, coded.j) is not None


def test_rows_a_sum_reads_stay_float64():
    """`pack`'s `floats`: a fine dim a sum or mean reads keeps its values as they are (the
    kernels read them for every row an update counts)."""
    x, _ = CODED["cents"]
    edges, keys, nkeys = buckets(x, 2000)
    packed = lattice.pack([(x, keys, nkeys, edges)] * 2, N, floats={1})
    assert packed.rinfo[:, 0].tolist() == [lattice.LAT32, lattice.FLOAT]
    assert np.array_equal(packed.raw[0], x, equal_nan=True)


def test_the_kernels_decode_as_numpy_does():
    """A shard of every kind of raw row (uint32 and uint16 offsets on the lattice, with an
    exception; 16, 32, 40 and 48-bit offsets of bits, with an exception; and floats) through
    store.kernel_arrays: kernels._raw_at gives lattice.values' value at every row, NaN at
    the no-value key."""
    sparse = RNG.integers(0, 1000, N).astype(np.float64)  # and one row far out: an exception
    sparse[7] = 2.0**40
    xs = [CODED["cents"][0], FLOATS["every magnitude around zero"], CODED["epoch milliseconds as microseconds"][0],
          sparse, *(np.asarray(BITS[k][0], np.float64) for k in (
              "an infinity (an exception)", "arbitrary doubles in narrower buckets", "negative float32 values",
              "arbitrary doubles in buckets")),
          with_nan(RNG.uniform(-101, -100, N))]
    rows, dims = [], []
    for rc, x in enumerate(xs):
        edges, keys, nkeys = buckets(x, 200 if rc < 4 else 2000)
        rows.append((x, keys, nkeys, edges))
        dims.append(Dim(f"value:f{rc}", "fine", f"f{rc}", None, "float", nkeys, True, raw=rc,
                        edges=edges.tolist()))
    packed = lattice.pack(rows, N)
    assert packed.rinfo[:, 0].tolist() == [lattice.LAT32, lattice.FLOAT, lattice.LAT32, lattice.LAT16,
                                           lattice.ULP40, lattice.ULP32, lattice.ULP16, lattice.ULP48,
                                           lattice.ULP40]
    assert packed.raw.shape == (1, N) and packed.lat.shape == (6, N) and packed.lat16.shape == (3, N)
    assert packed.lat8.shape == (2, N)
    assert len(packed.xrows) == len(packed.xvals) > 1
    layout = SimpleNamespace(dims=dims)
    table, index = base_table(layout, [packed.rinfo])
    stored = (None, packed.raw, *[None] * 6, *packed[1:])
    arrays = kernel_arrays(stored, layout, table, index)
    R = K._raw(arrays)
    for rc, (x, keys, nkeys, edges) in enumerate(rows):
        want = lattice.values(packed, rc, keys, nkeys, edges)
        has = keys < nkeys
        assert np.array_equal(want[has].view(np.int64), x[has].view(np.int64))
        got = np.array([K._raw_at(R, rc, r, np.int64(keys[r])) for r in range(N)])
        assert np.array_equal(got[has].view(np.int64), x[has].view(np.int64)), rc
        assert np.isnan(got[~has]).all()
