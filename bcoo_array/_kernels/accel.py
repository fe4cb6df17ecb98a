"""Products on the accelerator layouts of ``.layouts``, in plain XLA (``jax.numpy``).

Each function takes the layout's flat value buffer (a JAX array, possibly
traced), its index arrays (JAX arrays) and its static parameters, and a
dense ``x`` of shape ``(k,)`` or ``(k, n)``; it returns ``A @ x`` of shape
``(m,)`` or ``(m, n)``. Every step (slices, row gathers, dense reductions,
``where``) has JAX's JVP, transpose and batching rules, so ``grad`` with
respect to the values or ``x`` and ``vmap`` over ``x`` work unchanged;
``transpose_product`` gives ``A.T @ y``.

Float32 products and reductions are written as element-wise products and
sums (or matrix products at ``Precision.HIGHEST``), so a TPU's default
bf16-pass matrix unit does not change the result beyond float32 rounding.

``product`` is the one place that chooses the kernel of a layout.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

#: Largest temporary (bytes) one lane gather materialises before it is split into chunks.
LANE_GATHER_CHUNK_BYTES = 1 << 28

_HIGHEST = jax.lax.Precision.HIGHEST


def device_layout(lay, device=None):
    """A ``.layouts.Layout``'s index arrays on ``device`` (None: the default device).

    Returns ``(slot, arrays, perm, inverse)``: ``slot`` the NumPy slot of each
    stored entry (int32 where ``n_slots`` allows), ``arrays`` the layout's
    index arrays as JAX arrays, ``perm``/``inverse`` the reordering and its
    inverse (int32 JAX arrays) or None. Copied with ``jax.device_put``: a
    NumPy array through ``jnp.asarray`` is an eager program per shape
    (``stage``), each compiled on first use (60 ms on a TPU v5e).
    """
    put = lambda a: jax.device_put(a, device)  # noqa: E731
    slot = lay.slot.astype(np.int32 if lay.n_slots < 2**31 - 1 else np.int64)
    perm = inverse = None
    if lay.perm is not None:
        inv = np.empty_like(lay.perm)
        inv[lay.perm] = np.arange(len(lay.perm))
        perm, inverse = put(lay.perm.astype(np.int32)), put(inv.astype(np.int32))
    return slot, {name: put(a) for name, a in lay.arrays.items()}, perm, inverse


def placed_values(data, slot: np.ndarray, slot_t: np.ndarray | None, arrays, n_slots: int, device=None):
    """A layout's value buffer from BCOO ``data``, on ``device``: placed on the host when ``data`` is
    concrete (``.layouts.place_values_host``: no program compiled per ``nse``), by ``layout_values``
    (a scatter-add, differentiable) when it is traced.

    ``slot``/``slot_t`` are the NumPy slots (``device_layout``; ``slot_t``
    (nse, c) the further copies a ``panels`` layout keeps, or None),
    ``arrays`` the layout's arrays as placed.
    """
    from .._shapes import is_tracer
    from .layouts import place_values_host

    if is_tracer(data):
        return layout_values(jnp.asarray(data), jnp.asarray(slot), arrays, n_slots)
    return jax.device_put(place_values_host(np.asarray(data), slot, n_slots, slot_t), device)


def layout_values(data, slot, arrays, n_slots: int):
    """A layout's value buffer from BCOO ``data``: ``place_values`` at ``slot``, and at each column of
    ``arrays["slot_t"]`` (nse, c) too where the layout keeps more copies of the values (``panels``: its
    transpose's tiles and its row-sorted COO entries)."""
    values = place_values(data, slot, n_slots)
    slot_t = arrays.get("slot_t")
    if slot_t is not None:
        for j in range(slot_t.shape[1]):
            values = values + place_values(data, slot_t[:, j], n_slots)
    return values


def place_values(data, slot, n_slots: int, dtype=None):
    """The flat value buffer of a layout: ``data`` scatter-added at ``slot`` (padding dropped).

    ``data`` (nse,) is the BCOO ``data`` of a zero-filled 2-D matrix and
    ``slot`` (nse,) ``Layout.slot``. Duplicates add up. Differentiable in
    ``data`` (the cotangent is a gather at ``slot``).
    """
    dtype = data.dtype if dtype is None else dtype
    if n_slots == 0:  # an empty matrix: every entry is padding (its gradient, a gather, has nothing to read)
        return jnp.zeros((0,), dtype)
    return jnp.zeros((n_slots,), dtype).at[slot].add(data.astype(dtype), mode="drop")


def gather(x, idx, lanes: bool):
    """``x[idx]`` along axis 0 of ``x`` (shape ``(k,)`` or ``(k, n)``).

    With ``lanes`` and a 1-D ``x``, a *lane gather*: ``x`` viewed as rows of
    128 lanes, one row gathered per index (XLA's row gather streams on a TPU
    where its element gather does not) and the lane picked with a one-hot
    select and a sum of the picked value with zeros: exact, and an ``inf``
    or NaN elsewhere in the row never leaks in (only a picked ``-0.0``
    reads as ``+0.0``).
    """
    if not lanes or x.ndim != 1:
        return jnp.take(x, idx, axis=0, mode="clip")
    k = x.shape[0]
    lanes_n = 128
    rows = -(-max(k, 1) // lanes_n)
    x2 = jnp.pad(x, (0, rows * lanes_n - k)).reshape(rows, lanes_n)
    flat = idx.reshape(-1)
    per = lanes_n * x.dtype.itemsize
    chunk = max(1, LANE_GATHER_CHUNK_BYTES // per)
    if flat.shape[0] <= chunk:
        return _lane_pick(x2, flat).reshape(idx.shape)
    n_chunks = -(-flat.shape[0] // chunk)
    padded = jnp.pad(flat, (0, n_chunks * chunk - flat.shape[0]))
    out = jax.lax.map(lambda c: _lane_pick(x2, c), padded.reshape(n_chunks, chunk))
    return out.reshape(-1)[:flat.shape[0]].reshape(idx.shape)


def _lane_pick(x2, flat):
    row = jnp.take(x2, flat // 128, axis=0, mode="clip")
    lane = (flat % 128)[:, None]
    hit = lane == jnp.arange(128, dtype=flat.dtype)[None, :]
    return jnp.sum(jnp.where(hit, row, jnp.zeros((), row.dtype)), axis=1, dtype=row.dtype)


def _shift(v, off: int, out_len: int):
    """``u[i] = v[i + off]`` for ``0 <= i + off < len(v)``, else 0; ``u`` has ``out_len`` rows."""
    n = v.shape[0]
    left = max(0, -off)
    right = max(0, off + out_len - n)
    pad = [(left, right)] + [(0, 0)] * (v.ndim - 1)
    vp = jnp.pad(v, pad) if (left or right) else v
    start = left + off
    return jax.lax.slice_in_dim(vp, start, start + out_len, axis=0)


def dia_product(values, static, shape, x):
    """``A @ x`` in diagonal storage: a sum of shifted slices, no gather."""
    m, k = shape
    offsets = static["offsets"]
    vals = values.reshape(len(offsets), m)
    y = None
    for d, off in enumerate(offsets):
        v = vals[d] if x.ndim == 1 else vals[d][:, None]
        term = v * _shift(x, off, m)
        y = term if y is None else y + term
    if y is None:
        return jnp.zeros((m,) + x.shape[1:], jnp.result_type(values, x))
    return y


def dia_transpose_product(values, static, shape, y):
    """``A.T @ y`` in diagonal storage: ``z[j] = sum_d values[d, j - off] * y[j - off]``."""
    m, k = shape
    offsets = static["offsets"]
    vals = values.reshape(len(offsets), m)
    z = None
    for d, off in enumerate(offsets):
        v = vals[d] if y.ndim == 1 else vals[d][:, None]
        term = _shift(v * y, -off, k)
        z = term if z is None else z + term
    if z is None:
        return jnp.zeros((k,) + y.shape[1:], jnp.result_type(values, y))
    return z


def _bucket_values(values, static, unit_shape):
    off = 0
    for nb, w in static["buckets"]:
        size = nb * w * int(np.prod(unit_shape))
        yield values[off:off + size].reshape((nb, w) + unit_shape)
        off += size


def _finish_rows(outs, arrays, n_block_rows: int, tail_shape, dtype):
    """Concatenate bucket outputs and put block rows back in order (empty rows zero)."""
    if outs:
        y = outs[0] if len(outs) == 1 else jnp.concatenate(outs, axis=0)
    else:
        y = jnp.zeros((0,) + tail_shape, dtype)
    inverse = arrays.get("inverse")
    if inverse is not None:
        y = jnp.concatenate([y, jnp.zeros((1,) + tail_shape, y.dtype)], axis=0)
        y = jnp.take(y, inverse, axis=0)  # a row gather of whole block rows
    return y


def tiles_product(values, arrays, static, shape, x):
    """``A @ x`` in the tile layout (sliced block ELL of dense ``(bm, bk)`` tiles), XLA."""
    m, k = shape
    bm, bk = static["tile"]
    nmb, nkb = static["n_block_rows"], static["n_block_cols"]
    dtype = jnp.result_type(values, x)
    vector = x.ndim == 1
    xs = (x[:, None] if vector else x).astype(dtype)
    n = xs.shape[1]
    panels = jnp.pad(xs, ((0, nkb * bk - k), (0, 0))).reshape(nkb, bk, n)
    if vector:
        panels = panels[..., 0]  # (nkb, bk): one 128-lane row per panel
    outs = []
    for i, v in enumerate(_bucket_values(values.astype(dtype), static, (bm, bk))):
        xg = jnp.take(panels, arrays[f"cols{i}"], axis=0, mode="clip")  # (nb, w, bk[, n])
        if vector:
            outs.append(jnp.sum(v * xg[:, :, None, :], axis=(1, 3), dtype=dtype))  # (nb, bm)
        else:
            outs.append(jnp.einsum("rtij,rtjn->rin", v, xg, precision=_HIGHEST))  # (nb, bm, n)
    tail = (bm,) if vector else (bm, n)
    y = _finish_rows(outs, arrays, nmb, tail, dtype)
    return y.reshape((nmb * bm,) + tail[1:])[:m]


def ell_product(values, arrays, static, shape, x, lanes: bool):
    """``A @ x`` in the scalar sliced ELL layout: a gather of ``x`` per slot, a dense row sum."""
    m, k = shape
    dtype = jnp.result_type(values, x)
    xs = x.astype(dtype)
    outs = []
    for i, v in enumerate(_bucket_values(values.astype(dtype), static, ())):
        cols = arrays[f"cols{i}"]
        xg = gather(xs, cols, lanes)  # (nb, w[, n]); padding slots (column k) masked: never 0 * inf
        ok = cols < k
        xg = jnp.where(ok if x.ndim == 1 else ok[..., None], xg, jnp.zeros((), dtype))
        if x.ndim == 1:
            outs.append(jnp.sum(v * xg, axis=1, dtype=dtype))
        else:
            outs.append(jnp.sum(v[..., None] * xg, axis=1, dtype=dtype))
    y = _finish_rows(outs, arrays, m, tuple(x.shape[1:]), dtype)
    return y[:m]


def blocks_product(values, arrays, static, shape, x):
    """``A @ x`` in the ``blocks`` layout: per chunk one panel gather and one-hot selects, no per-entry gather.

    A vector ``x`` takes element-wise selects and sums (the vector unit);
    several columns take one-hot matrix products at ``Precision.HIGHEST``
    (the matrix unit; one-hot factors are exact).
    """
    m, k = shape
    R, P = static["block"]
    E = static["chunk"]
    nrp, ncp = static["n_block_rows"], static["n_block_cols"]
    dtype = jnp.result_type(values, x)
    vector = x.ndim == 1
    xs = (x[:, None] if vector else x).astype(dtype)
    n = xs.shape[1]
    panels = jnp.pad(xs, ((0, ncp * P - k), (0, 0))).reshape(ncp, P, n)
    iota_p = jnp.arange(P, dtype=jnp.int32)
    iota_r = jnp.arange(R, dtype=jnp.int32)
    zero = jnp.zeros((), dtype)
    outs = []
    for i, v in enumerate(_bucket_values(values.astype(dtype), static, (E,))):
        lr, lc = arrays[f"lr{i}"], arrays[f"lc{i}"]  # (nb, w, E)
        xb = jnp.take(panels, arrays[f"cols{i}"], axis=0, mode="clip")  # (nb, w, P, n): one row gather per chunk
        if vector:
            xb = xb[..., 0]
            xg = jnp.sum(jnp.where(lc[..., None] == iota_p, xb[:, :, None, :], zero), axis=-1, dtype=dtype)
            prod = v * xg  # (nb, w, E)
            outs.append(jnp.sum(jnp.where(lr[..., None] == iota_r, prod[..., None], zero), axis=(1, 2),
                                dtype=dtype))  # (nb, R)
        else:
            oh_c = (lc[..., None] == iota_p).astype(dtype)  # (nb, w, E, P)
            xg = jnp.einsum("rtep,rtpn->rten", oh_c, xb, precision=_HIGHEST)
            prod = v[..., None] * xg
            oh_r = (lr[..., None] == iota_r).astype(dtype)  # (nb, w, E, R)
            outs.append(jnp.einsum("rteq,rten->rqn", oh_r, prod, precision=_HIGHEST))  # (nb, R, n)
    tail = (R,) if vector else (R, n)
    y = _finish_rows(outs, arrays, nrp, tail, dtype)
    return y.reshape((nrp * R,) + tail[1:])[:m]


def coo_product(values, arrays, shape, x):
    """``A @ x`` from the layout's row-sorted COO entries (the fallback)."""
    from .coo import coo_matmat

    m, k = shape
    dtype = jnp.result_type(values, x)
    return coo_matmat(values.astype(dtype), arrays["rows"], arrays["cols"], x.astype(dtype), m, True)


def dense_product(values, shape, x):
    """``A @ x`` with ``A`` stored dense: one matrix product at ``Precision.HIGHEST``."""
    m, k = shape
    dtype = jnp.result_type(values, x)
    return jnp.matmul(values.reshape(m, k).astype(dtype), x.astype(dtype), precision=_HIGHEST)


def permute(x, perm, lanes: bool):
    """``x[perm]`` along axis 0 (a lane gather on a TPU)."""
    return gather(x, perm, lanes)


def panels_product(values, arrays, static, shape, x, transpose: bool = False):
    """``A @ x`` (or ``A.T @ x``) in the ``panels`` layout: the Pallas kernels of ``.panels`` and ``.sell``.

    The panels kernel takes right-hand sides as rows (``(n, k)``). ``A.T @
    x`` runs the same kernel on the transpose's tiles (the second part of
    the value buffer, from ``static["split"]``), or, for a layout without
    them, the kernel's XLA transpose formula. The product also gets the
    layout's SELL-8 slots of the same orientation (``.sell``: a row of
    ``x`` per stored entry; the value buffer's third part, or its fourth
    for the transpose), which many columns of ``x`` (or a ``vmap`` over
    many vectors) run on where ``.sell.sell_is_cheaper`` says so: the
    panels kernel's cost grows with the columns, the SELL kernel's does not
    up to 128. On a TPU v5e with 128 columns, in a loop: nh2010 1.04 ms
    against 2.67 for a COO product (0.62 against 1.02 with 16 columns on the
    panels kernel), cage11 1.69 against 1.90 on the panels kernel, bcsstk16
    0.71 against 0.43 (uniform tiles: the panels kernel stays). Where the
    layout keeps dense blocks (``.mxu``, the value buffer's fifth part),
    a product with a matrix ``x`` runs on them when they cost less than
    both (``mxu_product``; bcsstk16 0.065 ms).
    """
    from . import sell as _sell
    from .panels import panels_matmat, transpose_reference

    m, k = shape
    split = static.get("split", values.shape[0])
    unroll = static.get("unroll")  # None: panels.TILE_UNROLL
    xs = x[None] if x.ndim == 1 else x.T
    sell = ()
    if "s_table" in arrays:
        sfx = "_t" if transpose else ""
        offset = arrays["lcols"].size + arrays["lcols_t"].size + (arrays["s_rows"].size if transpose else 0)
        n_slots = arrays["s_rows" + sfx].shape[0]
        sell = (values[offset:offset + n_slots], arrays["s_table" + sfx], arrays["s_rows" + sfx],
                arrays["s_cols" + sfx])
    if sell and x.ndim == 2 and "mxu_table" in arrays:  # the dense blocks where cheaper than tiles and slots
        tiles, meta = (arrays["lcols_t"], arrays["meta_t"]) if transpose and "meta_t" in arrays else (
            arrays["lcols"], arrays["meta"])
        y = mxu_product(values, arrays, sell, shape, x, transpose,
                        _sell.panels_rhs_cost(tiles.shape[0], meta.shape[0] > 2, x.shape[1]))
        if y is not None:
            return y
    if transpose and "meta_t" in arrays:
        y = panels_matmat(values[split:split + arrays["lcols_t"].size], arrays["meta_t"], arrays["lcols_t"], xs,
                          shape=(k, m), unroll=unroll, sell=sell)
    elif transpose:
        y = transpose_reference(values[:split], arrays["meta"], arrays["lcols"], xs, shape=shape)
    else:
        y = panels_matmat(values[:split], arrays["meta"], arrays["lcols"], xs, shape=shape, unroll=unroll, sell=sell)
    return y[0] if x.ndim == 1 else y.T


def mxu_product(values, arrays, sell, shape, x, transpose: bool, other_cost: float = math.inf):
    """``A @ x`` (or ``A.T @ x``) for ``x`` of several columns on a layout's dense blocks (``.mxu``: the
    value buffer's last part, ``arrays["mxu_table"]``, read in place; those of the reordered matrix where
    the layout keeps its order, ``arrays["mxu_perm"]``, and its inverse), where it keeps them, the values
    are float32 and the blocks cost less (``.mxu.mxu_cost``) than the layout's SELL-8 slots of the
    product's orientation (``sell``: ``(values, table, rows, cols)``, whose COO formula also serves a
    non-finite ``x``; ``.sell.sell_cost``) and than ``other_cost`` (the layout's other kernel); else None."""
    from . import mxu as _mxu
    from . import sell as _sell

    table = arrays.get("mxu_table")
    if table is None or x.ndim != 2 or np.dtype(jnp.result_type(values, x)) != np.float32:
        return None
    n = _mxu.value_count(table)
    other_cost = min(other_cost, _sell.sell_cost(sell[2].shape[0], x.shape[1], shape, _sell.fits(shape)))
    perm, inverse = arrays.get("mxu_perm"), arrays.get("mxu_inverse")  # (blocks of the reordered matrix)
    if _mxu.mxu_cost(n // (_mxu.BLOCK_ROWS * _mxu.LANES), x.shape[1], shape, perm is not None) >= other_cost:
        return None
    start = values.shape[0] - n  # (the layouts align it: .mxu.part_start)
    order = arrays.get("s_order_t" if transpose else "s_order")  # (the slots in row order: a sorted segment sum)
    return _mxu.mxu_matmat(values, table, sell[0], sell[2], sell[3], x, perm, inverse, shape=shape,
                           transpose=transpose, offset=start, s_order=order, s_table=sell[1])


def sell_product(values, arrays, static, shape, x, transpose: bool = False):
    """``A @ x`` (or ``A.T @ x``) in the ``sell`` layout: one vector on ``.segmented``'s blocks, several
    columns on ``.sell``'s SELL-8 slots or ``.segmented``'s wide blocks, of the matrix or of its transpose.

    The value buffer holds the matrix's blocks (up to ``static["split"]``),
    the transpose's, then the matrix's SELL-8 slots or wide blocks and the
    transpose's (``.layouts.build_sell``). One vector:
    ``.segmented.segmented_matvec`` (8 entries per vector step, ``x`` and
    the result packed in VMEM; ``static["unroll"]``: its lane loop's, None
    for ``LANE_UNROLL``). Several: ``.sell.sell_matmat`` (a row of ``x`` per
    stored entry) where ``x`` fits that kernel's VMEM (or the dense blocks of
    ``.mxu`` where the layout keeps them and they cost less,
    ``mxu_product``); else the wide blocks
    (``.segmented.segmented_matvec``, a few columns a call) or the COO
    formula on the blocks' slots, whichever ``.segmented.wide_is_cheaper``
    prices lower (``static["wide"]`` False: always the formula, for eager
    products, whose first call would pay the wide kernel's compile, about
    25 s). Each takes its XLA formula, a COO product, where its kernel does
    not apply.
    """
    from .segmented import segmented_matvec, segmented_reference, table_width, wide_is_cheaper
    from .sell import sell_matmat

    m, k = shape
    sfx, out_shape = ("_t", (k, m)) if transpose else ("", shape)
    n1, n2 = arrays["seg_cols"].size, arrays["seg_cols_t"].size
    blocks = values[n1:n1 + n2] if transpose else values[:n1]  # the blocks' values
    if x.ndim == 1:
        tables = (arrays[name + sfx] for name in ("seg_out", "seg_addr", "seg_cols", "seg_rows", "seg_ends"))
        return segmented_matvec(blocks, *tables, x, shape=out_shape, unroll=static.get("unroll"))
    def second(per_slot):  # the values of the SELL-8 slots or wide blocks (an array of one entry a slot)
        n3 = arrays[per_slot].size
        start = n1 + n2 + (n3 if transpose else 0)
        return values[start:start + arrays[per_slot + sfx].size]

    if "s_table" in arrays:
        sell = (second("s_rows"), arrays["s_table" + sfx], arrays["s_rows" + sfx], arrays["s_cols" + sfx])
        y = mxu_product(values, arrays, sell, shape, x, transpose)
        return sell_matmat(*sell, x, shape=out_shape) if y is None else y
    if ("w_addr" in arrays and static.get("wide", True)
            and wide_is_cheaper(x.shape[1], table_width(arrays["w_addr"]), arrays["w_cols" + sfx].size, blocks.size)):
        tables = (arrays[name + sfx] for name in ("w_out", "w_addr", "w_cols", "w_rows", "w_ends"))
        return segmented_matvec(second("w_cols"), *tables, x, shape=out_shape, unroll=static.get("unroll"))
    # the COO formula on the blocks' slots
    return segmented_reference(blocks, arrays["seg_rows" + sfx], arrays["seg_cols" + sfx], x, shape=out_shape)


def _kernel(kind, static, shape, values, arrays, x, lanes, transpose):
    m, k = shape
    if kind == "panels":
        return panels_product(values, arrays, static, shape, x, transpose)
    if kind == "sell":
        return sell_product(values, arrays, static, shape, x, transpose)
    if transpose:
        if kind == "dense":
            dtype = jnp.result_type(values, x)
            return jnp.matmul(values.reshape(m, k).T.astype(dtype), x.astype(dtype), precision=_HIGHEST)
        if kind == "dia":
            return dia_transpose_product(values, static, shape, x)
        dtype = jnp.result_type(values, x)
        if not jnp.issubdtype(dtype, jnp.inexact) and "u_rows" in arrays:
            # JAX transposes no integer matrix product (tiles, blocks with several columns): the stored
            # entries' own product, exact
            return stored_product(values, arrays, shape, x, transpose=True)
        fwd = lambda v: _kernel(kind, static, shape, values, arrays, v, lanes, False)  # noqa: E731
        probe = jax.ShapeDtypeStruct((k,) + tuple(x.shape[1:]), dtype)
        (z,) = jax.linear_transpose(fwd, probe)(x.astype(dtype))
        if z.dtype == jax.dtypes.float0:  # (an integer product that reads nothing of x, no stored entry: zeros)
            return jnp.zeros(probe.shape, dtype)
        return z
    if kind == "dense":
        return dense_product(values, shape, x)
    if kind == "dia":
        return dia_product(values, static, shape, x)
    if kind == "tiles":
        return tiles_product(values, arrays, static, shape, x)
    if kind == "blocks":
        return blocks_product(values, arrays, static, shape, x)
    if kind == "ell":
        return ell_product(values, arrays, static, shape, x, lanes)
    return coo_product(values, arrays, shape, x)


def product(kind: str, static: dict, shape, values, arrays, x, *, lanes: bool, transpose: bool = False):
    """``A @ x`` (or ``A.T @ x`` with ``transpose``) for a layout: the one place that picks its kernel.

    ``static`` and ``arrays`` are the layout's (``.layouts.Layout``), with a
    permutation already undone by the caller. ``transpose`` uses a closed
    form for ``dense`` and ``dia`` and JAX's transpose of the forward product
    for the others (row gathers become scatter-adds).

    Layouts that store zeros (``.layouts.STORES_ZEROS``) multiply them by
    ``x``: an ``inf`` or NaN of ``x`` at an unstored position would give NaN
    where a sparse product gives 0 (unstored entries are structural zeros,
    ``docs/design.md``). So the kernel reads ``x`` with its non-finite
    values zeroed, ``x`` and the result are checked (two reductions) and,
    only when either holds a non-finite value, the result is recomputed from
    the stored entries (``lax.cond``; under ``vmap`` both branches run).
    The values' gradient then is the stored entries' (``x[c]`` for entry
    ``(r, c)``, an ``inf`` included), not NaN. That check is the primitive
    ``checked_product_p``: its transpose in ``x`` is the checked product
    of the other orientation, so ``jax.linear_transpose`` of ``op @ x`` and
    solvers that transpose their operator (``jax.scipy.sparse.linalg.gmres``
    under ``grad``) work, where JAX cannot transpose a ``cond`` on ``x``;
    its JVP binds it again, so reverse mode runs the same check on the
    cotangent (an ``inf`` at a row without stored entries meets nothing).

    A layout that keeps dense blocks for many columns (``.mxu``: the
    ``mxu_table`` of ``panels`` and ``sell`` layouts), and every ``sell``
    layout, takes one vector through the primitive ``vector_product_p``,
    whose batching rule makes a ``vmap`` over vectors one product with as
    many columns where that is priced lower than one product per vector
    (``vmap_as_columns``), which then takes the layout's kernels for
    several columns (the blocks, SELL-8 slots or wide blocks); the
    one-vector kernels' own batching rules know only their layout's SELL-8
    slots (``panels``) or map the one-vector kernel (``sell``).
    """
    if not needs_check(kind, static, x.ndim) or "u_rows" not in arrays:
        return unchecked_product(kind, static, shape, values, arrays, x, lanes=lanes, transpose=transpose)
    names = tuple(sorted(arrays))
    return checked_product_p.bind(values, x, *(arrays[n] for n in names), kind=kind, static=freeze_static(static),
                                  shape=tuple(shape), lanes=bool(lanes), transpose=bool(transpose), names=names)


def _checked_product(values, x, *index_arrays, kind, static, shape, lanes, transpose, names):
    """``product`` of a layout that stores zeros, with its non-finite check (``checked_product_p``'s
    implementation; ``static`` frozen, ``index_arrays`` the layout's arrays in the order of ``names``)."""
    arrays = dict(zip(names, index_arrays))
    static = dict(static)
    # The kernel reads x with its non-finite values zeroed, and the check looks at x as well: when x holds
    # one the fallback gives the result, and the kernel's own derivative (a zero cotangent times x) must not
    # add 0 * inf = NaN to the values' gradient (the blocks layout's one-hot products read a whole panel of
    # x per stored entry; the others meet x at their stored slots). With a finite x nothing changes.
    x_finite = jnp.isfinite(x)
    xk = jnp.where(x_finite, x, jnp.zeros((), x.dtype))
    y = _kernel(kind, static, shape, values, arrays, xk, lanes, transpose)
    finite = jnp.logical_and(jnp.all(jnp.isfinite(y)), jnp.all(x_finite))
    return jax.lax.cond(finite, lambda: y, lambda: stored_product(values, arrays, shape, x, transpose))


def stored_product(values, arrays, shape, x, transpose: bool):
    """``A @ x`` (or ``A.T @ x``) from a layout's stored entries, ``arrays["u_rows"]``, ``["u_cols"]`` and
    ``["u_slot"]`` (unique positions sorted by row; padding at row m, column k, slot n_slots reads 0 and is
    dropped): a COO product, exact, where no zero of an unstored position meets ``x``. The transpose takes
    them in column order (``arrays["u_order_t"]``, where the layout has it): both sum sorted rows."""
    from .coo import coo_matmat

    m, k = shape
    dtype = jnp.result_type(values, x)
    rows, cols, slots = arrays["u_rows"], arrays["u_cols"], arrays["u_slot"]
    in_order = not transpose
    if transpose:
        rows, cols, m = cols, rows, k
        if "u_order_t" in arrays:
            rows, cols, slots = (jnp.take(a, arrays["u_order_t"], axis=0) for a in (rows, cols, slots))
            in_order = True
    vals = jnp.take(values, slots, axis=0, mode="fill", fill_value=0).astype(dtype)
    return coo_matmat(vals, rows, cols, x.astype(dtype), m, in_order)


checked_product_p = Primitive("bcoo_array_checked_product")
checked_product_p.def_impl(_checked_product)
mlir.register_lowering(checked_product_p, mlir.lower_fun(_checked_product, multiple_results=False))


@checked_product_p.def_abstract_eval
def _checked_abstract(values, x, *index_arrays, shape, transpose, **params):
    # (from the shapes: every kernel returns ``(m,) + x.shape[1:]`` in ``result_type(values, x)``)
    rows = shape[1] if transpose else shape[0]
    return jax.core.ShapedArray((rows,) + tuple(x.shape[1:]), jnp.result_type(values.dtype, x.dtype))


def _bilinear_jvp(primitive):
    """The JVP rule of a product primitive bound as ``(values, x, *index_arrays)``: linear in the values and
    in ``x`` (the index arrays carry no tangent), the tangent is the primitive of ``(dv, x)`` plus that of
    ``(values, dx)``, so reverse mode transposes the primitive itself (whose rule, for the checked product,
    also checks a non-finite cotangent); a symbolic zero stays unevaluated."""
    def jvp(primals, tangents, **params):
        values, x, *index_arrays = primals
        dv, dx = tangents[0], tangents[1]
        bind = partial(primitive.bind, **params)
        y = bind(values, x, *index_arrays)
        terms = []
        if type(dv) is not ad.Zero:
            terms.append(bind(dv, x, *index_arrays))
        if type(dx) is not ad.Zero:
            terms.append(bind(values, dx, *index_arrays))
        if not terms:
            return y, ad.Zero.from_primal_value(y)
        return y, terms[0] if len(terms) == 1 else terms[0] + terms[1]
    return jvp


def _real_cotangent(ct_v, values_aval):
    """A values' cotangent in the values' dtype: the real part for real values of a complex product (JAX's
    convention)."""
    if not jnp.issubdtype(values_aval.dtype, jnp.complexfloating) and jnp.iscomplexobj(ct_v):
        ct_v = jnp.real(ct_v)
    return ct_v.astype(values_aval.dtype)


def _checked_transpose(ct, values, x, *index_arrays, **params):
    none = [None] * len(index_arrays)
    if type(ct) is ad.Zero:
        return [None, None, *none]
    if ad.is_undefined_primal(values) and ad.is_undefined_primal(x):
        raise ValueError("a sparse product is bilinear: transpose it in the values or in x, not both")
    if ad.is_undefined_primal(x):  # x -> A @ x transposes to ct -> A.T @ ct, checked as well
        flipped = dict(params, transpose=not params["transpose"])
        ct_x = checked_product_p.bind(values, ct, *index_arrays, **flipped)
        return [None, ct_x.astype(x.aval.dtype), *none]
    return [_values_cotangent(ct, values.aval, x, index_arrays, **params), None, *none]


def _values_cotangent(ct, values_aval, x, index_arrays, *, kind, static, shape, lanes, transpose, names):
    """The cotangent of the value buffer of ``A @ x`` (or ``A.T @ x``): ``ct[r] . x[c]`` at each stored
    entry's slot. The kernel's transpose (at zero values: it is linear) where ``ct`` and ``x`` are finite;
    else the stored entries' own formula, as the product's check does: a padding zero's ``ct[r] * x[c]``
    is then never formed, so an ``inf`` meets only the stored entries of its row or column."""
    arrays = dict(zip(names, index_arrays))
    static = dict(static)
    dtype = jnp.result_type(values_aval.dtype, x.dtype, ct.dtype)
    ct, xs = ct.astype(dtype), x.astype(dtype)
    rows, cols = arrays["u_rows"], arrays["u_cols"]
    if transpose:
        rows, cols = cols, rows

    def kernel():
        zero = jnp.zeros(values_aval.shape, dtype)
        _, vjp = jax.vjp(lambda v: _kernel(kind, static, shape, v, arrays, xs, lanes, transpose), zero)
        return vjp(ct)[0]

    def sparse():  # padding entries (row m, column k, slot n_slots) read 0 and are dropped
        c2 = ct if ct.ndim == 2 else ct[:, None]
        x2 = xs if xs.ndim == 2 else xs[:, None]
        per_entry = jnp.sum(jnp.take(c2, rows, axis=0, mode="fill", fill_value=0)
                            * jnp.take(x2, cols, axis=0, mode="fill", fill_value=0), axis=1)
        return jnp.zeros(values_aval.shape, dtype).at[arrays["u_slot"]].add(per_entry, mode="drop")

    finite = jnp.logical_and(jnp.all(jnp.isfinite(ct)), jnp.all(jnp.isfinite(xs)))
    return _real_cotangent(jax.lax.cond(finite, kernel, sparse), values_aval)


def _checked_batch(args, dims, **params):
    out = jax.vmap(partial(_checked_product, **params), in_axes=tuple(dims))(*args)
    return out, 0


ad.primitive_jvps[checked_product_p] = _bilinear_jvp(checked_product_p)
ad.primitive_transposes[checked_product_p] = _checked_transpose
batching.primitive_batchers[checked_product_p] = _checked_batch


def _vector_product(values, x, *index_arrays, kind, static, shape, lanes, transpose, names):
    """``product`` of one vector on a layout with dense blocks or a ``sell`` layout (``vector_product_p``'s
    implementation; ``static`` frozen, ``index_arrays`` the layout's arrays in the order of ``names``)."""
    return _kernel(kind, dict(static), shape, values, dict(zip(names, index_arrays)), x, lanes, transpose)


vector_product_p = Primitive("bcoo_array_vector_product")
vector_product_p.def_impl(_vector_product)
vector_product_p.def_abstract_eval(_checked_abstract)
mlir.register_lowering(vector_product_p, mlir.lower_fun(_vector_product, multiple_results=False))


def _vector_transpose(ct, values, x, *index_arrays, kind, static, shape, lanes, transpose, names):
    none = [None] * len(index_arrays)
    if type(ct) is ad.Zero:
        return [None, None, *none]
    if ad.is_undefined_primal(values) and ad.is_undefined_primal(x):
        raise ValueError("a sparse product is bilinear: transpose it in the values or in x, not both")
    params = dict(kind=kind, static=static, shape=shape, lanes=lanes, names=names)
    if ad.is_undefined_primal(x):  # x -> A @ x transposes to ct -> A.T @ ct
        ct_x = vector_product_p.bind(values, ct, *index_arrays, transpose=not transpose, **params)
        return [None, ct_x.astype(x.aval.dtype), *none]
    dtype = jnp.result_type(values.aval.dtype, x.dtype, ct.dtype)
    fwd = lambda v: _vector_product(v, x.astype(dtype), *index_arrays, transpose=transpose, **params)  # noqa: E731
    (ct_v,) = jax.linear_transpose(fwd, jax.ShapeDtypeStruct(values.aval.shape, dtype))(ct.astype(dtype))
    return [_real_cotangent(ct_v, values.aval), None, *none]


def _vector_batch(args, dims, **params):
    values, x, *index_arrays = args
    arrays, static = dict(zip(params["names"], index_arrays)), dict(params["static"])
    if (dims[0] is None and all(d is None for d in dims[2:])  # mapped vectors: the columns of one product
            and vmap_as_columns(params["kind"], static, arrays, params["shape"], x.shape[dims[1]],
                                params["transpose"])):
        xs = jnp.moveaxis(x, dims[1], 1)
        return _kernel(params["kind"], static, params["shape"], values, arrays, xs, params["lanes"],
                       params["transpose"]), 1
    return jax.vmap(partial(_vector_product, **params), in_axes=tuple(dims))(*args), 0


def vmap_as_columns(kind: str, static, arrays: dict, shape, n_vectors: int, transpose: bool) -> bool:
    """Whether a ``vmap`` over ``n_vectors`` vectors of a layout's product runs as one product with as many
    columns (``vector_product_p``'s batching rule) rather than one product per vector.

    A ``panels`` layout always does: its several-column product prices
    its own kernels (the panels kernel with as many right-hand sides, the
    SELL-8 slots, the dense blocks), which covers what the one-vector
    kernel's batching did. A ``sell`` layout compares ``n_vectors`` calls of
    the one-vector kernel (``.segmented.vector_cost``) with its several-column
    product (``sell_columns_cost``). Decided from shapes, with
    ``.costs.COSTS["tpu"]``.
    """
    if kind != "sell":
        return True
    from .segmented import vector_cost

    static = dict(static)  # (a layout's dict, or an operator's frozen pairs)
    slots = arrays["seg_cols_t" if transpose else "seg_cols"].size
    return sell_columns_cost(static, arrays, shape, n_vectors, transpose) < n_vectors * vector_cost(slots)


def sell_columns_cost(static: dict, arrays: dict, shape, n: int, transpose: bool) -> float:
    """The price of ``n`` columns of ``x`` in a ``sell`` layout (``sell_product``'s choice): its SELL-8 slots
    (or dense blocks, where kept and cheaper), else its wide blocks or the COO formula on the one-vector
    blocks' slots, whichever is cheaper (the formula alone for eager layouts, ``static["wide"]`` False)."""
    from . import mxu as _mxu
    from . import sell as _sell
    from .segmented import coo_cost, table_width, wide_cost

    sfx = "_t" if transpose else ""
    if "s_table" in arrays:
        price = _sell.sell_cost(arrays["s_rows" + sfx].shape[0], n, shape, _sell.fits(shape))
        if "mxu_table" in arrays:
            blocks = _mxu.value_count(arrays["mxu_table"]) // (_mxu.BLOCK_ROWS * _mxu.LANES)
            price = min(price, _mxu.mxu_cost(blocks, n, shape, "mxu_perm" in arrays))
        return price
    price = coo_cost(n, arrays["seg_cols" + sfx].size)
    if "w_addr" in arrays and static.get("wide", True):
        price = min(price, wide_cost(n, table_width(arrays["w_addr"]), arrays["w_cols" + sfx].size))
    return price


ad.primitive_jvps[vector_product_p] = _bilinear_jvp(vector_product_p)
ad.primitive_transposes[vector_product_p] = _vector_transpose
batching.primitive_batchers[vector_product_p] = _vector_batch


def needs_check(kind: str, static: dict, ndim: int) -> bool:
    """Whether ``product`` checks a layout's result for non-finite values (``.layouts.STORES_ZEROS``).

    A ``blocks`` product of a vector reads ``x`` through one-hot *selects*
    (padding selects nothing), so only stored entries meet ``x``: exact, no
    check. Its several-column product takes one-hot matrix products, where
    a zero times an ``inf`` of the panel gives NaN: checked. A ``dia``
    layout whose every slot that meets ``x`` is stored
    (``static["complete"]``: a banded matrix's full diagonals) multiplies no
    padding, element-wise: no check.
    """
    from .layouts import STORES_ZEROS

    if kind not in STORES_ZEROS or static.get("complete", False):
        return False
    return not (kind == "blocks" and ndim == 1)


def freeze_static(static: dict) -> tuple:
    """A layout's ``static`` parameters as a hashable, sorted tuple of pairs (a ``jax.jit`` static argument)."""
    def freeze(v):
        if isinstance(v, dict):
            return freeze_static(v)
        if isinstance(v, (list, tuple)):
            return tuple(freeze(e) for e in v)
        return v

    return tuple(sorted((k, freeze(v)) for k, v in static.items()))


def compiled_product(values, arrays, x, perm=None, inverse=None, *, kind: str, static: tuple, shape, lanes: bool,
                     transpose: bool = False, checked: bool = True):
    """``product`` (or ``unchecked_product``) as one compiled program per layout and operand shape, with the
    layout's reordering applied to ``x`` (``perm``) and undone on the result (``inverse``) when given.

    ``static`` is ``freeze_static`` of the layout's parameters. Eager
    products (of a prepared operator, or of a placed BCOOArray through
    ``.matmul``) run this: a many-diagonal ``dia`` product is hundreds of
    operations, one dispatch each took seconds on a first call. Inside an
    outer trace it inlines. Where no check applies (``needs_check``) the
    program does not take the stored entries' COO arrays (and it never
    takes ``slot_t``, nor, for a concrete vector ``x``, the ``panels``
    layout's SELL slots), so it depends on the layout's parameters and shapes only, not on
    ``nse``; where one applies they are padded to a size bucket.
    """
    checked = checked and needs_check(kind, dict(static), x.ndim)
    # only what the product reads enters the program (``slot_t`` places values, ``u_*`` serve the check)
    arrays = {name: a for name, a in arrays.items() if name != "slot_t" and (checked or not name.startswith("u_"))}
    from .._shapes import is_tracer

    if kind == "panels" and x.ndim == 1 and not is_tracer(x):  # a concrete vector never takes the panels
        # layout's SELL slots (a vmap over vectors may)
        arrays = {name: a for name, a in arrays.items() if not name.startswith("s_")}
    return _compiled_product(values, arrays, x, perm, inverse, kind=kind, static=static, shape=shape, lanes=lanes,
                             transpose=transpose, checked=checked)


@partial(jax.jit, static_argnames=("kind", "static", "shape", "lanes", "transpose", "checked"))
def _compiled_product(values, arrays, x, perm, inverse, *, kind: str, static: tuple, shape, lanes: bool,
                      transpose: bool, checked: bool):
    if perm is not None:
        x = permute(x, perm, lanes)
    fn = product if checked else unchecked_product
    y = fn(kind, dict(static), shape, values, arrays, x, lanes=lanes, transpose=transpose)
    if inverse is not None:
        y = permute(y, inverse, lanes)
    return y


def unchecked_product(kind: str, static: dict, shape, values, arrays, x, *, lanes: bool, transpose: bool = False):
    """``product`` without the non-finite check (two reductions and a ``cond`` fewer per product): what the
    solvers of ``bcoo_array.accelerator`` iterate, on finite vectors. One vector of a layout with dense
    blocks, or of a ``sell`` layout, goes through ``vector_product_p`` (``product``)."""
    if x.ndim == 1 and ("mxu_table" in arrays or kind == "sell"):  # a vmap over vectors reaches their kernels
        names = tuple(sorted(arrays))
        return vector_product_p.bind(values, x, *(arrays[n] for n in names), kind=kind,
                                     static=freeze_static(static), shape=tuple(shape), lanes=bool(lanes),
                                     transpose=bool(transpose), names=names)
    return _kernel(kind, static, shape, values, arrays, x, lanes, transpose)
