"""Shapes derived from the manifest's inputs: the primary input, and companion shapes for the others."""

from __future__ import annotations

from conformance.engine.manifest import Manifest, TensorSpec


def primary(manifest: Manifest) -> TensorSpec:
    """The input whose shape drives the call: the first required input without a declared rank."""
    free = [s for s in manifest.inputs if not s.optional and s.rank is None]
    required = [s for s in manifest.inputs if not s.optional]
    return (free or required or list(manifest.inputs))[0]


def companions(spec: TensorSpec, shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """Shapes for a non-primary input next to a primary of ``shape``: a guess that matches ("match",
    trailing dims, or "lead", leading dims), then the same one short and long on its last axis, of
    length 1 on it (broadcastable), and one rank lower and higher.  Which guess the contract accepts is left to the engine to say."""
    rank = len(shape) if spec.rank is None else spec.rank
    if rank == 0:
        return [("match", ()), ("rank+1", (1,))]
    match = tuple(shape[-rank:]) if len(shape) >= rank else (1,) * (rank - len(shape)) + tuple(shape)
    out = [("match", match)]
    if len(shape) >= rank and tuple(shape[:rank]) != match:
        out.append(("lead", tuple(shape[:rank])))
    if match[-1] > 0:
        out.append(("short", match[:-1] + (match[-1] - 1,)))
    out.append(("long", match[:-1] + (match[-1] + 1,)))
    if match[-1] > 2:  # broadcastable under NumPy/ONNX rules, which an implementation may wrongly accept
        out.append(("broadcast", match[:-1] + (1,)))
    out.append(("rank-1", match[1:]))
    out.append(("rank+1", (1,) + match))
    return out


def fmt_shape(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"
