"""Load a kernel manifest: parse JSON, check the schema, check cross references, build the model.

Every problem is reported with the file and JSON pointer it concerns; a
manifest with problems never yields a :class:`Manifest`.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
from jinja2 import nodes

from conformance.engine.dtypes import WGSL_DTYPE
from conformance.engine.expressions import (
    BUILTIN_NAMES,
    Compilations,
    Evaluator,
    Rule,
    RuleTable,
    attribute_paths,
    names_used,
    parse,
)
from conformance.engine.profile import LIMIT_NAMES
from conformance.errors import ExpressionError, ManifestError
from conformance.files import MAX_PACKAGE_FILE, read_confined

#: Names that expressions may read besides rules and builtins.
SCOPE_ROOTS = ("shapes", "ranks", "dtypes", "present", "device", "tunables", "attributes")

#: Keywords of Kernel.plan/run besides tensors and attributes: no attribute may take these names.
RESERVED_ARGUMENTS = ("profile", "tunables", "verify")
#: The longest op id (domain.name): with "@<version>" and ".digest" it stays a file name every file system takes.
MAX_OP_ID = 200


def _pointer(*parts: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass(frozen=True)
class Expr:
    """A parsed expression and where it stands in the manifest."""

    tree: nodes.Expr
    pointer: str


@dataclass(frozen=True)
class TensorSpec:
    role: str
    typevar: str
    rank: int | None
    optional: bool


@dataclass(frozen=True)
class AttributeSpec:
    """An op attribute (``epsilon``): passed per call, read by expressions as ``attributes.<name>``."""

    name: str
    type: str  # float | int | bool
    default: Any  # the value a call that leaves it out gets (None when required)
    required: bool  # no default: every call must pass it


def attribute_value(type_: str, value: Any) -> Any:
    """``value`` as an attribute of ``type_`` holds it (float, int or bool), or a ValueError saying why not."""
    is_bool = isinstance(value, (bool, np.bool_))
    if type_ == "bool" and is_bool:
        return bool(value)
    if type_ == "int" and isinstance(value, (int, np.integer)) and not is_bool:
        if -(2**63) <= int(value) < 2**63:
            return int(value)
        raise ValueError(f"int attribute value {value} is outside the int64 range")
    if type_ == "float" and isinstance(value, (int, float, np.integer, np.floating)) and not is_bool:
        try:
            if math.isfinite(float(value)):
                return float(value)
        except OverflowError:  # an int beyond the float range
            pass
        raise ValueError(f"float attribute value {value!r} is not finite")
    raise ValueError(f"expected {'an' if type_ == 'int' else 'a'} {type_}, got {value!r} ({type(value).__name__})")


@dataclass(frozen=True)
class OutputSpec:
    role: str
    typevar: str
    rank: Expr | None
    shape: Expr


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str
    value: Expr


@dataclass(frozen=True)
class BindingSpec:
    name: str
    buffer_type: str
    arg: str | None
    element_type: str | None
    length: str | int | None
    struct_name: str | None
    fields: tuple[FieldSpec, ...]
    pointer: str
    packing: str | None = None  # "2x16float": each u32 lane holds two f16 elements of the argument
    first: str | int | None = None  # the argument's first element the binding covers (default 0)
    count: str | int | None = None  # how many of the argument's elements it covers (default: the rest)


@dataclass(frozen=True)
class PassSpec:
    id: str
    name: str
    shader: str
    bindings: tuple[BindingSpec, ...]
    threads: Expr
    workgroup_size: Expr
    pointer: str


@dataclass(frozen=True)
class VariantSpec:
    id: str
    priority: int
    when: tuple[Expr, ...]
    constant_names: tuple[str, ...]
    passes: tuple[PassSpec, ...]
    evaluator: Evaluator
    pointer: str


class Problems:
    """Collects (pointer, message) pairs so one load reports every problem."""

    def __init__(self, file: str):
        self.file = file
        self.items: list[tuple[str, str]] = []

    def add(self, pointer: str, message: str):
        self.items.append((pointer, message))

    def raise_if_any(self):
        if self.items:
            pointer, message = self.items[0]
            more = f" (and {len(self.items) - 1} more problem(s))" if len(self.items) > 1 else ""
            err = ManifestError(message + more, file=self.file, pointer=pointer)
            err.problems = [ManifestError(m, file=self.file, pointer=p) for p, m in self.items]
            raise err


def _schema() -> dict:
    text = resources.files("conformance.engine").joinpath("schema/manifest.schema.json").read_text()
    return json.loads(text)


_VALIDATOR = jsonschema.Draft202012Validator(_schema())


class _Object(dict):
    duplicates: tuple = ()


def _reject_duplicate_keys(pairs):
    seen = _Object()
    dups = []
    for key, value in pairs:
        if key in seen:
            dups.append(key)
        seen[key] = value
    seen.duplicates = tuple(dups)
    return seen


#: Expressions (derive rules, constants, predicates, dispatch, fields...) per manifest: parsing costs ~0.5 ms
#: each, so about 1 s; the shipped manifests have under 100.
MAX_EXPRESSIONS = 2000
#: Nodes of every variant's ``when`` predicates once rules are inlined, summed: planning one call may evaluate all
#: of them, and the case generator plans thousands of calls (FastGelu uses about 1,000).
MAX_PREDICATE_NODES = 5000
#: JSON values (objects, arrays and scalars) per manifest: schema validation and parsing grow with it; the
#: shipped manifests hold about 300.
MAX_JSON_VALUES = 20000
#: How deep a manifest's JSON may nest (the shipped ones reach 10, proposals 12): deeper is refused before anything recurses into it.
MAX_DEPTH = 64


def _plain(value, file, path=()):
    """Plain dicts again, raising at the first duplicated key, or at nesting past MAX_DEPTH, with its JSON pointer."""
    if len(path) > MAX_DEPTH and isinstance(value, (dict, list)):
        raise ManifestError(
            f"malformed JSON: nested too deeply (more than {MAX_DEPTH} levels)", file=file, pointer=_pointer(*path)
        )
    if isinstance(value, dict):
        if getattr(value, "duplicates", ()):
            key = value.duplicates[0]
            raise ManifestError(f"malformed JSON: duplicate key {key!r}", file=file, pointer=_pointer(*path, key))
        return {k: _plain(v, file, path + (k,)) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, file, path + (i,)) for i, v in enumerate(value)]
    return value


def read_json(path: Path) -> Any:
    """Parse a JSON file, reporting line and column on a syntax error."""
    return _read(path)[0]


def _read(path: Path) -> tuple[Any, bytes]:
    """The parsed JSON and the exact bytes it came from (read once, so the digest matches what was parsed)."""
    try:
        data = read_confined(path.parent, path, MAX_PACKAGE_FILE)  # a regular file of its package, capped
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"manifest is not UTF-8: {exc.reason} at byte {exc.start}", file=str(path)) from None
    return parse_json(text, str(path)), data


def parse_json(text: str, file: str) -> Any:
    try:
        raw = json.loads(text, object_pairs_hook=_reject_duplicate_keys, parse_constant=_bad_constant)
    except json.JSONDecodeError as exc:
        raise ManifestError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", file=file) from None
    except ValueError as exc:
        raise ManifestError(f"malformed JSON: {exc}", file=file) from None
    except RecursionError:
        raise ManifestError("malformed JSON: nested too deeply", file=file) from None
    plain = _plain(raw, file)
    values = _count_values(plain)
    if values > MAX_JSON_VALUES:  # before the schema and the expressions, whose cost grows with it
        raise ManifestError(f"{values} JSON values, more than the {MAX_JSON_VALUES} a manifest may hold", file=file)
    return plain


def _count_values(value) -> int:
    count, stack = 0, [value]
    while stack:
        v = stack.pop()
        count += 1
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return count


def _bad_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _deepest(err):
    if not err.context:
        return err
    return max((_deepest(c) for c in err.context), key=lambda e: len(e.absolute_path))


def schema_problems(raw: Any, problems: Problems):
    errors = sorted(
        map(_deepest, _VALIDATOR.iter_errors(raw)), key=lambda e: (list(map(str, e.absolute_path)), e.message)
    )
    for err in errors[:50]:
        message = err.message if len(err.message) < 300 else err.message[:300] + "..."
        problems.add(_pointer(*err.absolute_path), f"schema: {message}")


class Manifest:
    """A validated manifest: the op contract and its variants, ready for planning."""

    def __init__(self, raw: dict, *, file: str, directory: Path | None = None, text: bytes | None = None):
        self.raw = raw
        self.file = file
        self.directory = directory
        self.sha256 = hashlib.sha256(text if text is not None else json.dumps(raw, sort_keys=True).encode()).hexdigest()
        self.compilations = Compilations()  # shared by every variant's evaluator: one compile budget
        self._parsed = 0
        self._predicate_nodes = 0
        problems = Problems(file)
        schema_problems(raw, problems)
        problems.raise_if_any()
        op_length = len(raw["domain"]) + 1 + len(raw["name"])
        if op_length > MAX_OP_ID:
            problems.add(
                "/name",
                f"the op id {raw['domain']}.{raw['name'][:40]}... is {op_length} characters, more "
                f"than {MAX_OP_ID}: it names files (<op id>@<version>.digest), and file systems "
                f"take names of at most 255 bytes",
            )
            problems.raise_if_any()
        self._build(problems)
        problems.raise_if_any()

    # -- construction -----------------------------------------------------------------------
    def _parse(self, source, pointer, problems) -> Expr | None:
        self._parsed += 1
        if self._parsed > MAX_EXPRESSIONS:  # stop at once: parsing is ~0.5 ms an expression
            problems.add(pointer, f"more than {MAX_EXPRESSIONS} expressions in one manifest")
            problems.raise_if_any()
        try:
            return Expr(parse(source, pointer=pointer, file=self.file), pointer)
        except ExpressionError as exc:
            problems.add(pointer, exc.detail + (f" in {source!r}" if exc.source else ""))
            return None

    def _build(self, problems: Problems):
        raw = self.raw
        self.domain: str = raw["domain"]
        self.name: str = raw["name"]
        self.version: int = int(raw.get("version", 1))  # the published contract's version (the card's `version`)
        self.type_constraints: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in raw["typeConstraints"].items()}
        self.tunables: dict[str, int] = dict(raw.get("tunables", {}))
        self.attributes: dict[str, AttributeSpec] = self._attributes(raw.get("attributes", {}), problems)
        self.inputs = tuple(
            TensorSpec(t["role"], t["dtype"], t.get("rank"), bool(t.get("optional", False))) for t in raw["inputs"]
        )
        self.outputs = tuple(
            OutputSpec(
                o["role"],
                o["dtype"],
                self._parse(o["rank"], _pointer("outputs", i, "rank"), problems) if "rank" in o else None,
                self._parse(o["shape"], _pointer("outputs", i, "shape"), problems),
            )
            for i, o in enumerate(raw["outputs"])
        )
        self.args: dict[str, dict] = dict(raw.get("args", {}))
        self._check_roles(problems)
        for name in self.attributes:
            if name in self.roles:
                problems.add(
                    _pointer("attributes", name),
                    f"attribute {name!r} has the name of a tensor role: calls pass both as keywords",
                )

        derive = {
            name: self._parse(src, _pointer("derive", name), problems) for name, src in raw.get("derive", {}).items()
        }
        top_constants = {
            name: self._parse(src, _pointer("constants", name), problems)
            for name, src in raw.get("constants", {}).items()
        }
        for name in derive:
            if name in top_constants:
                problems.add(_pointer("constants", name), f"constant {name!r} has the name of a derive rule")
        for name in list(derive) + list(top_constants):
            if name in SCOPE_ROOTS or name in BUILTIN_NAMES:
                problems.add(
                    _pointer("derive" if name in derive else "constants", name),
                    f"{name!r} is a reserved name (scope: {', '.join(SCOPE_ROOTS)}; "
                    f"functions: {', '.join(BUILTIN_NAMES)})",
                )
        if problems.items:
            return
        self.derive_names = tuple(derive)
        self.top_constant_names = tuple(top_constants)
        base_rules = {n: Rule(n, e.tree, e.pointer) for n, e in {**derive, **top_constants}.items()}
        self.base_table = RuleTable(base_rules, file=self.file)
        self._check_rules(base_rules, problems)

        binding_sets = {
            name: self._bindings(lst, _pointer("bindingSets", name), problems)
            for name, lst in raw.get("bindingSets", {}).items()
        }
        self.variants = tuple(
            self._variant(i, v, base_rules, derive.keys(), binding_sets, problems)
            for i, v in enumerate(raw["variants"])
        )
        self._check_variant_ids(problems)
        for out in self.outputs:
            for expr in (out.rank, out.shape):
                if expr is not None:
                    self._check_names(expr, set(base_rules), problems, allow_rules=False)

    @staticmethod
    def _attributes(raw: dict, problems: Problems) -> dict[str, AttributeSpec]:
        out = {}
        for name, spec in raw.items():
            pointer = _pointer("attributes", name)
            if name in RESERVED_ARGUMENTS:
                problems.add(
                    pointer, f"attribute name {name!r} is reserved (call keywords: {', '.join(RESERVED_ARGUMENTS)})"
                )
            default = None
            if "default" in spec:
                try:
                    default = attribute_value(spec["type"], spec["default"])
                except ValueError as exc:
                    problems.add(_pointer("attributes", name, "default"), str(exc))
            out[name] = AttributeSpec(name, spec["type"], default, "default" not in spec)
        return out

    def _check_roles(self, problems: Problems):
        roles: dict[str, str] = {}
        for kind, specs in (("inputs", self.inputs), ("outputs", self.outputs)):
            for i, spec in enumerate(specs):
                if spec.role in roles:
                    problems.add(_pointer(kind, i, "role"), f"role {spec.role!r} is declared twice")
                roles[spec.role] = kind
                if spec.typevar not in self.type_constraints:
                    problems.add(
                        _pointer(kind, i, "dtype"),
                        f"type variable {spec.typevar!r} is not in typeConstraints "
                        f"(declared: {', '.join(self.type_constraints)})",
                    )
        for name, arg in self.args.items():
            expected_kind = "inputs" if arg["role"] == "input" else "outputs"
            if roles.get(name) != expected_kind:
                problems.add(
                    _pointer("args", name),
                    f"arg {name!r} has role {arg['role']!r} but no {expected_kind[:-1]} of that role exists",
                )
            spec = next((s for s in self.inputs if s.role == name), None)
            if spec is not None and "required" in arg and arg["required"] == spec.optional:
                problems.add(
                    _pointer("args", name, "required"),
                    f"arg {name!r} says required={arg['required']} but input {name!r} says optional={spec.optional}",
                )
        self.roles = roles

    def _check_rules(self, rules: dict[str, Rule], problems: Problems):
        known = set(rules)
        for rule in rules.values():
            self._check_names(Expr(rule.tree, rule.pointer), known, problems)
        for rule in rules.values():
            try:
                self.base_table.inline(rule.tree, rule.pointer)
            except ExpressionError as exc:
                if (exc.pointer, exc.detail) not in problems.items:
                    problems.add(exc.pointer or rule.pointer, exc.detail)

    def _check_names(self, expr: Expr, rule_names: set[str], problems: Problems, *, allow_rules: bool = True):
        """Every name resolves: rules, builtins, and documented paths under the scope roots."""
        tree = expr.tree
        for name in sorted(names_used(tree)):
            if name in SCOPE_ROOTS or name in BUILTIN_NAMES or (allow_rules and name in rule_names):
                continue
            known = sorted(set(SCOPE_ROOTS) | set(BUILTIN_NAMES) | (rule_names if allow_rules else set()))
            problems.add(expr.pointer, f"unknown name {name!r}; known names: {', '.join(known)}")
        for call in ([tree] if isinstance(tree, nodes.Call) else []) + list(tree.find_all(nodes.Call)):
            if not (isinstance(call.node, nodes.Name) and call.node.name in BUILTIN_NAMES):
                problems.add(expr.pointer, f"only the functions {', '.join(BUILTIN_NAMES)} may be called")
        for path in sorted(attribute_paths(tree)):
            message = self._path_problem(path)
            if message:
                problems.add(expr.pointer, message)

    def _path_problem(self, path: tuple[str, ...]) -> str | None:
        root, rest = path[0], path[1:]
        dotted = ".".join(path)
        if root not in SCOPE_ROOTS:
            return None if root in BUILTIN_NAMES else f"{dotted}: {root!r} has no attributes"
        if not rest:
            return None
        key = rest[0]
        if root in ("shapes", "ranks", "present"):
            ok, expected = key in self.roles, sorted(self.roles)
        elif root == "dtypes":
            ok, expected = key in self.type_constraints, sorted(self.type_constraints)
        elif root == "tunables":
            ok, expected = key in self.tunables, sorted(self.tunables)
        elif root == "attributes":
            ok, expected = key in self.attributes, sorted(self.attributes)
        else:  # device
            if key == "features":
                return None if len(rest) == 1 else f"{dotted}: device.features has no attributes"
            if key != "limits":
                return f"{dotted}: device has only 'limits' and 'features'"
            if len(rest) < 2:
                return None
            ok, expected = rest[1] in LIMIT_NAMES, ["WebGPU limit names in camelCase"]
            key = rest[1]
        if not ok:
            return f"{dotted}: unknown {root[:-1] if root.endswith('s') else root} {key!r}; expected one of {expected}"
        if len(rest) > (2 if root == "device" else 1):
            return f"{dotted}: too many attribute levels"
        return None

    def _bindings(self, items: list[dict], pointer: str, problems: Problems) -> tuple[BindingSpec, ...]:
        out = []
        seen = set()
        for i, b in enumerate(items):
            bp = f"{pointer}/{i}"
            if b["name"] in seen:
                problems.add(_pointer_join(bp, "name"), f"binding name {b['name']!r} is used twice")
            seen.add(b["name"])
            arg = b.get("arg")
            if arg is not None and arg not in self.args:
                problems.add(_pointer_join(bp, "arg"), f"arg {arg!r} is not in args ({', '.join(self.args)})")
            for key in ("packing", "first", "count"):
                if key in b and b["buffer"]["type"] == "uniform":
                    problems.add(_pointer_join(bp, key), f"{key} applies to storage bindings, not to a uniform")
            struct = b.get("struct")
            fields = ()
            if struct:
                fields = tuple(
                    FieldSpec(
                        f["name"],
                        f["type"],
                        self._parse(f["value"], _pointer_join(bp, "struct", "fields", j, "value"), problems),
                    )
                    for j, f in enumerate(struct["fields"])
                )
            out.append(
                BindingSpec(
                    b["name"],
                    b["buffer"]["type"],
                    arg,
                    b.get("elementType"),
                    b.get("length"),
                    struct["name"] if struct else None,
                    fields,
                    bp,
                    b.get("packing"),
                    b.get("first"),
                    b.get("count"),
                )
            )
        return tuple(out)

    def _variant(self, index, raw_variant, base_rules, derive_names, binding_sets, problems) -> VariantSpec:
        vp = _pointer("variants", index)
        constants = {
            name: self._parse(src, _pointer_join(vp, "constants", name), problems)
            for name, src in raw_variant.get("constants", {}).items()
        }
        for name in constants:
            if name in derive_names or name in SCOPE_ROOTS or name in BUILTIN_NAMES:
                problems.add(
                    _pointer_join(vp, "constants", name), f"constant {name!r} shadows a derive rule or a reserved name"
                )
        rules = dict(base_rules)
        rules.update({n: Rule(n, e.tree, e.pointer) for n, e in constants.items() if e is not None})
        table = RuleTable(rules, file=self.file)
        constant_names = tuple(dict.fromkeys([*self.top_constant_names, *constants]))
        for expr in constants.values():
            if expr is not None:
                self._check_names(expr, set(rules), problems)
                try:
                    table.inline(expr.tree, expr.pointer)
                except ExpressionError as exc:
                    problems.add(exc.pointer or expr.pointer, exc.detail)
        when = tuple(
            e
            for j, src in enumerate(raw_variant["when"])
            if (e := self._parse(src, _pointer_join(vp, "when", j), problems)) is not None
        )
        for expr in when:
            self._check_names(expr, set(rules), problems)
            try:  # what choosing a variant evaluates, summed over the variants: every call pays it
                self._predicate_nodes += table.inlined_size(expr.tree, expr.pointer)
            except ExpressionError as exc:
                problems.add(exc.pointer or expr.pointer, exc.detail)
            if self._predicate_nodes > MAX_PREDICATE_NODES:
                problems.add(
                    expr.pointer,
                    f"the variants' predicates add up to more than {MAX_PREDICATE_NODES} nodes "
                    f"once rules are inlined (each call may evaluate all of them)",
                )
                problems.raise_if_any()
        passes = []
        pass_ids = set()
        for j, raw_pass in enumerate(raw_variant["passes"]):
            pp = _pointer_join(vp, "passes", j)
            if raw_pass["id"] in pass_ids:
                problems.add(_pointer_join(pp, "id"), f"pass id {raw_pass['id']!r} is used twice")
            pass_ids.add(raw_pass["id"])
            bindings = raw_pass["bindings"]
            if isinstance(bindings, str):
                if bindings not in binding_sets:
                    problems.add(
                        _pointer_join(pp, "bindings"),
                        f"bindingSets has no entry {bindings!r} (known: {', '.join(binding_sets) or 'none'})",
                    )
                    specs = ()
                else:
                    specs = binding_sets[bindings]
            else:
                specs = self._bindings(bindings, _pointer_join(pp, "bindings"), problems)
            for spec in specs:
                for ref in (spec.element_type, spec.length, spec.first, spec.count):
                    if isinstance(ref, str) and ref.startswith("$") and ref[1:] not in constant_names:
                        problems.add(
                            _pointer_join(pp, "bindings") if isinstance(bindings, str) else spec.pointer,
                            f"{ref} in binding {spec.name!r} is not a constant of variant "
                            f"{raw_variant['id']!r} (constants: {', '.join(constant_names)})",
                        )
                for f in spec.fields:
                    if f.value is not None:
                        self._check_names(f.value, set(rules), problems)
            threads = self._parse(raw_pass["dispatch"]["threads"], _pointer_join(pp, "dispatch", "threads"), problems)
            wg = self._parse(
                raw_pass["dispatch"]["workgroupSize"], _pointer_join(pp, "dispatch", "workgroupSize"), problems
            )
            for expr in (threads, wg):
                if expr is not None:
                    self._check_names(expr, set(rules), problems)
            passes.append(PassSpec(raw_pass["id"], raw_pass["name"], raw_pass["shader"], specs, threads, wg, pp))
        return VariantSpec(
            raw_variant["id"],
            raw_variant["priority"],
            when,
            constant_names,
            tuple(passes),
            Evaluator(table, self.compilations),
            vp,
        )

    def _check_variant_ids(self, problems: Problems):
        ids, priorities = {}, {}
        for v in self.variants:
            if v.id in ids:
                problems.add(_pointer_join(v.pointer, "id"), f"variant id {v.id!r} is used twice")
            ids[v.id] = v
            if v.priority in priorities:
                problems.add(
                    _pointer_join(v.pointer, "priority"),
                    f"priority {v.priority} is shared with variant {priorities[v.priority]!r}: "
                    f"selection would be ambiguous",
                )
            priorities[v.priority] = v.id
        self.variants = tuple(sorted(self.variants, key=lambda v: -v.priority))

    # -- queries ----------------------------------------------------------------------------
    @property
    def op_id(self) -> str:
        return f"{self.domain}.{self.name}"

    @property
    def package_id(self) -> str:
        """The op id, with ``@<version>`` from version 2 on: names golden files, reports and diff pairs."""
        return self.op_id if self.version == 1 else f"{self.op_id}@{self.version}"

    @property
    def case_prefix(self) -> str:
        """The first part of case ids: the op name, with ``@<version>`` from version 2 on."""
        return self.name if self.version == 1 else f"{self.name}@{self.version}"

    def variant(self, variant_id: str) -> VariantSpec:
        for v in self.variants:
            if v.id == variant_id:
                return v
        raise KeyError(f"{self.op_id} has no variant {variant_id!r}")

    @cached_property
    def shaders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.shader for v in self.variants for p in v.passes))

    def input(self, role: str) -> TensorSpec:
        return next(s for s in self.inputs if s.role == role)

    def allowed_wgsl_dtypes(self, typevar: str) -> tuple[str, ...]:
        return tuple(WGSL_DTYPE[d] for d in self.type_constraints[typevar])


def _pointer_join(base: str, *parts: Any) -> str:
    return base + _pointer(*parts)


def load_manifest(path: str | Path) -> Manifest:
    """Load and validate ``path`` (a manifest.json file)."""
    path = Path(path)
    raw, text = _read(path)
    if not isinstance(raw, dict):
        raise ManifestError(f"expected a JSON object at the top level, got {type(raw).__name__}", file=str(path))
    return Manifest(raw, file=str(path), directory=path.parent, text=text)
