"""The Case record, its readable id and its pytest markers."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

from cases.calls import CallSpec, wgsl
from cases.data import Recipe
from cases.families import FAMILY_NAMES
from cases.profiles import profile_named
from cases.shapes import fmt_shape
from conformance.engine.profile import DeviceProfile


@dataclass(frozen=True)
class Case:
    id: str
    package: str  # op id, e.g. com.microsoft.FastGelu (with @N from version 2)
    family: str
    inputs: dict[str, tuple[tuple[int, ...], str] | None]
    profile: DeviceProfile
    tunables: dict[str, int]  # overrides of the manifest's defaults only
    data: Recipe
    expect: dict[str, Any]
    heavy: bool = False
    markers: tuple[str, ...] = field(default=())
    attributes: dict[str, Any] = field(default_factory=dict)  # the op attributes passed (others: the defaults)

    def call_args(self) -> dict[str, Any]:
        """The call as ``make_call`` and ``Kernel.plan`` take it: tensors by role, the attributes by name."""
        return {**self.inputs, **self.attributes}

    @property
    def accepted(self) -> bool:
        return self.expect["outcome"] == "accepted"

    @property
    def planning_failed(self) -> bool:
        """Planning the call raised (a manifest expression failed): a defect, neither accepted nor rejected."""
        return self.expect["outcome"] == "planning-failed"

    @property
    def families(self) -> tuple[str, ...]:
        """Every family the case serves (one call can belong to several): the family markers."""
        return tuple(f for f in FAMILY_NAMES if marker(f) in self.markers)


def marker(name: str) -> str:
    return name.replace("-", "_").replace(".", "_")


def outcome_tag(expect: dict) -> str:
    """What a case id says of the outcome: the variant, ``reject-<reason>`` or ``planning-failed``."""
    if expect["outcome"] == "accepted":
        return expect["variant"]
    if expect["outcome"] == "planning-failed":
        return "planning-failed"
    return f"reject-{expect['reason']}"


#: Markers with a meaning of their own (pytest's, xdist's and this plugin's): a case marker derived from a
#: manifest or test.json name (a variant, a package, a stored case's markers) never takes one of these names.
RESERVED_MARKERS = frozenset(
    {
        "skip",
        "skipif",
        "xfail",
        "parametrize",
        "usefixtures",
        "filterwarnings",
        "tryfirst",
        "trylast",
        "hookwrapper",
        "optionalhook",
        "hookimpl",
        "no_cover",
        "timeout",
        "flaky",
        "asyncio",
        "anyio",
        "xdist_group",
        "heavy",
        "load_error",
        "slow",
        "django_db",
        "order",
        "dependency",
        "forked",
        "benchmark",
    }
)
#: The prefix of a derived marker that would otherwise be reserved, start with a digit or be a Python keyword.
MARKER_PREFIX = "k_"


def marker_name(text: str) -> str:
    """A case marker as pytest can take it: word characters only, and never a marker with a meaning of its own
    (a variant named ``xfail`` or ``heavy`` is marked ``k_xfail``, ``k_heavy``; one named ``1x``, ``k_1x``)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", str(text))[:64]
    if (
        not re.match(r"[A-Za-z_]", name)
        or name.startswith("_")
        or name.lower() in RESERVED_MARKERS
        or keyword.iskeyword(name)
        or name.startswith(MARKER_PREFIX)
        or name in ("and", "or", "not")
    ):
        name = MARKER_PREFIX + name
    return name


def case_id(short: str, spec: CallSpec, expect: dict, suffix: str = "") -> str:
    present = [(role, shape, dtype) for role, shape, dtype in spec.inputs if shape is not None]
    dtypes = spec.dtypes
    tag = wgsl(dtypes[0]) if len(dtypes) == 1 else ("mixed" if dtypes else "none")
    parts = [
        f"{role}{fmt_shape(shape)}" + (f":{wgsl(dtype)}" if len(dtypes) > 1 else "") for role, shape, dtype in present
    ]
    text = f"{short}/{tag}/{'+'.join(parts) or 'none'}/{outcome_tag(expect)}"
    if spec.profile != "baseline":
        text += f"@{spec.profile}"
    text += "".join(f"~{k}={v}" for k, v in spec.tunables)
    text += "".join(f"~{k}={v!r}" for k, v in spec.attributes)
    return text + (f"#{suffix}" if suffix else "")


def markers_for(short: str, families: list[str], spec: CallSpec, expect: dict) -> tuple[str, ...]:
    out = [marker(f) for f in families]
    out += [wgsl(d) for d in spec.dtypes]
    out.append(
        marker_name(expect["variant"])
        if expect["outcome"] == "accepted"
        else "planning_failed"
        if expect["outcome"] == "planning-failed"
        else "rejected"
    )
    out.append(marker_name(short))
    if spec.heavy:
        out.append("heavy")
    return tuple(dict.fromkeys(out))


def case_from(
    package: str,
    short: str,
    family: str,
    spec: CallSpec,
    expect: dict,
    case_id_: str,
    recipe: Recipe,
    families: list[str],
) -> Case:
    return Case(
        case_id_,
        package,
        family,
        spec.args(),
        profile_named(spec.profile),
        dict(spec.tunables),
        recipe,
        expect,
        spec.heavy,
        markers_for(short, families, spec, expect),
        dict(spec.attributes),
    )
