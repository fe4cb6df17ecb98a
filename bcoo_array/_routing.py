"""Routing namespace functions to other array types of this package.

Every public function of the namespace is decorated with ``routed``.
When one of its arguments (or an element of a list or tuple argument) has a
type that defines ``__bcoo_function__``, the call goes to that method
instead:

    type(arg).__bcoo_function__(arg, func, args, kwargs)

``func`` is the public function; the method returns the result or raises.
This is how [`bcoo_array.sharded.ShardedBCOOArray`][] takes part in the
namespace (its method looks the function up in one explicit table and
raises "gather first" for the others) without the namespace importing it:
the same idea as NumPy's ``__array_function__`` (NEP 18).

The wrapper also places results with their operands, as the array API
asks ("Device support": a result is on its operands' device). Kernels
that build a result from NumPy (the host engine, ``unique_*``,
``nonzero``) or from constants (``jnp.asarray`` of an index array) land
on the default device. So where JAX has several devices, the operands sit
committed on one device other than the default one and the call passes no
``device=``, each array of the result that has a buffer elsewhere is moved
there (on an accelerator, an array placed on its host's CPU keeps its
results there). Arrays take part through two methods: ``__bcoo_device__()`` (the
one device their buffers are committed to, None where they constrain
nothing, ``UNPLACEABLE`` where they must not be moved: traced, or on
several devices) and ``__bcoo_place__(device)`` (the array with every
buffer on ``device``). With one device nothing is looked at.
"""

from __future__ import annotations

import functools

import jax

_PROTOCOL = "__bcoo_function__"

#: What ``__bcoo_device__`` returns for an array whose results are not placed (traced, or on several devices).
UNPLACEABLE = "unplaceable"

_ONE_DEVICE: list[bool] = []


def one_device() -> bool:
    """Whether JAX has exactly one device, a CPU (an accelerator's host CPU is a second device)."""
    if not _ONE_DEVICE:
        _ONE_DEVICE.append(jax.device_count() == 1 and jax.default_backend() == "cpu")
    return _ONE_DEVICE[0]


def _device_of(a):
    """The device an operand is committed to, None where it constrains nothing (NumPy, scalars, uncommitted
    JAX arrays, host buffers), or ``UNPLACEABLE``."""
    t = type(a)
    if hasattr(t, "__bcoo_device__"):
        return a.__bcoo_device__()
    if isinstance(a, jax.core.Tracer):
        return UNPLACEABLE
    if isinstance(a, jax.Array):
        if not a.committed:
            return None
        devices = a.devices()
        return next(iter(devices)) if len(devices) == 1 else UNPLACEABLE
    return None


def _operands_device(args, kwargs):
    """The one non-default device the operands are committed to, else None."""
    found = set()
    for a in (*args, *kwargs.values()):
        for e in (a if type(a) in (list, tuple) else (a,)):
            d = _device_of(e)
            if d is UNPLACEABLE:
                return None
            if d is not None:
                found.add(d)
    if len(found) != 1:
        return None
    (device,) = found
    return None if device == _default_device() else device


def _default_device():
    """Where JAX puts a new array now: ``jax.default_device``'s device inside that context, else the first."""
    d = jax.config.jax_default_device
    if isinstance(d, jax.Device):
        return d
    return jax.devices(d)[0] if isinstance(d, str) else jax.devices()[0]


def place_like(out, *operands):
    """``out`` placed on ``operands``' device as the namespace's results are (the module docstring), for
    methods outside the namespace (``A[key]``, in-place updates): unchanged with one device, or where the
    operands are not committed to one non-default device."""
    if one_device():
        return out
    device = _operands_device(operands, {})
    return out if device is None else _place(out, device)


def check_one_device(*operands) -> None:
    """Raise ``ValueError`` where ``operands`` are committed to different devices, as JAX refuses them (for
    kernels that read operands on the host, where JAX would not see them), naming the devices and the fix."""
    if one_device():
        return
    found = {d for d in map(_device_of, operands) if d is not None and d is not UNPLACEABLE}
    if len(found) > 1:
        raise ValueError(f"the operands are on different devices ({', '.join(sorted(map(str, found)))}); move "
                         f"them to one with .to_device(device) or jax.device_put(x, device)")


def _place(out, device):
    """``out`` (an array, a JAX array, or a tuple or list of results) with every array on ``device``."""
    t = type(out)
    if hasattr(t, "__bcoo_place__"):
        return out.__bcoo_place__(device)
    if isinstance(out, jax.core.Tracer):  # (an array captured by a traced function: its results are traced)
        return out
    if isinstance(out, jax.Array):
        devices = out.devices()
        return jax.device_put(out, device) if len(devices) == 1 and devices != {device} else out
    if isinstance(out, tuple):
        items = [_place(e, device) for e in out]
        return t._make(items) if hasattr(t, "_make") else t(items)
    if t is list:
        return [_place(e, device) for e in out]
    return out


def is_routed_type(t: type) -> bool:
    """Whether instances of ``t`` implement namespace functions through ``__bcoo_function__``."""
    return hasattr(t, _PROTOCOL)


def _implementer(args, kwargs):
    for a in args:
        t = type(a)
        if hasattr(t, _PROTOCOL):
            return a
        if t is list or t is tuple:
            for e in a:
                if hasattr(type(e), _PROTOCOL):
                    return e
    for a in kwargs.values():
        if hasattr(type(a), _PROTOCOL):
            return a
    return None


def routed(fn):
    """Decorate a namespace function so that array types with ``__bcoo_function__`` can implement it.

    Parameters
    ----------
    fn : callable
        A public function of the namespace.

    Returns
    -------
    callable
        ``fn`` with the same name, signature and docstring; calls without
        such an argument run ``fn`` itself, their result placed on the
        operands' device (the module docstring).
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        other = _implementer(args, kwargs)
        if other is not None:
            return getattr(type(other), _PROTOCOL)(other, wrapper, args, kwargs)
        out = fn(*args, **kwargs)
        if one_device() or kwargs.get("device") is not None:
            return out
        device = _operands_device(args, kwargs)  # (the result with its operands: the module docstring)
        return out if device is None else _place(out, device)

    return wrapper


def public(fn, name: str, module: str):
    """A function built by a factory, named ``module.name`` and ``routed`` (the generated
    element-wise and FFT functions)."""
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    return routed(fn)
