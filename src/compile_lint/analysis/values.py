"""Abstract values: what an expression may hold when Dynamo traces it, and on which paths.

A `Value` is a small union of atoms (tensor, bool mask, a scalar read out of a tensor, a static
size, Python literals, None, sequences, modules, functions, ...). Each atom carries the path
condition under which it is there: `skip = False; if self.training: skip = torch.rand(()) < p`
leaves `skip` a bool by default and a mask only in training, so a branch on it breaks the graph
only in training. Joining two values keeps an atom on the paths common to both (bitwise AND).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass


class Cond:
    """Why a line might not run by default (inference, default config, no optional inputs): bit flags, plain
    ints and not an `enum.IntFlag`, whose `|` and `&` run in Python (the flags of every value are combined on
    every line walked)."""

    OPTIONAL_INPUT = 1  # under `arg is not None` for an argument that defaults to None
    CONFIG = 2  # under a branch on `self.config.X` or a constructor flag
    LOSS = 4  # under `labels is not None`, or in a loss
    TRAINING = 8  # under `self.training`, gradient checkpointing, or reached only from such code
    ALTERNATIVE = 16  # a `forward` that a class decorator replaces with another implementation
    HALF_PRECISION = 32  # under a check that a dtype is float16/bfloat16 (weights are float32 by default)


COND_LABELS = {
    Cond.ALTERNATIVE: "alternative-implementation",
    Cond.TRAINING: "training",
    Cond.HALF_PRECISION: "half-precision",
    Cond.LOSS: "loss",
    Cond.CONFIG: "config",
    Cond.OPTIONAL_INPUT: "optional-input",
}  # most telling first: a line under training and config is reported as training


def cond_label(cond: int) -> str:
    return next((label for flag, label in COND_LABELS.items() if cond & flag), "default")


# Simple atoms.
TENSOR = "tensor"
ASSUMED = "assumed-tensor"  # an un-annotated parameter of a region entry: probably a tensor, no evidence
MASK = "mask"  # a boolean tensor
ASSUMED_MASK = "assumed-mask"  # a comparison of assumed tensors: a mask if they are tensors
DATA = "data"  # a Python scalar read out of a tensor (`.item()`, `int(t)`): data-dependent
SIZE = "size"  # an int from shapes (`x.shape[0]`, `len(x)`): Dynamo guards on it, never data-dependent
TRUE = "true"
FALSE = "false"
INT = "int"
FLOAT = "float"
STR = "str"
NONE = "none"
NUMPY = "numpy"  # a numpy array: inside a region Dynamo traces numpy as tensors (torch._numpy)
OBJECT = "object"  # some other known non-tensor Python object (dtype, device, config, logger, ...)
UNKNOWN = "unknown"

FunctionKey = tuple[str, str]  # (path, qualname)
ClassKey = tuple[str, str]  # (path, qualname)


@dataclass(frozen=True)
class Seq:
    """A list, tuple or other iterable whose items are `item`."""

    item: Value


@dataclass(frozen=True)
class Tup:
    """A tuple of known length: `a, b = x, y` and `out, attn = self.attn(x)` keep each position apart."""

    items: tuple[Value, ...]
    fields: tuple[str, ...] = ()  # a namedtuple's field names

    @property
    def item(self) -> Value:
        return join_all(self.items)

    def field(self, name: str) -> Value | None:
        return self.items[self.fields.index(name)] if name in self.fields else None


@dataclass(frozen=True)
class Record:
    """A namedtuple class (`collections.namedtuple("T", "a b")`): calling it makes a `Tup` with fields."""

    fields: tuple[str, ...]


@dataclass(frozen=True)
class Mapping:
    """A dict whose values are `value`; `keyed` holds the values of the string keys known by name (the
    `**kwargs` a caller passed: `f(bm=bm)` into `def f(**kwargs)`), other keys are not tracked."""

    value: Value
    keyed: tuple[tuple[str, Value], ...] = ()

    def get(self, key: str) -> Value:
        return dict(self.keyed).get(key, self.value)

    def every_value(self) -> Value:
        """What any key may hold: the values of the keys known by name and of the others."""
        return join_all([self.value, *(value for _, value in self.keyed)])


@dataclass(frozen=True)
class Module:
    """An nn.Module instance; `cls` when its class is known (linted or resolvable), `name` for messages."""

    cls: ClassKey | None = None
    name: str = ""
    items: Value | None = None  # a container (nn.ModuleList, nn.Sequential, nn.ModuleDict): the modules it holds


@dataclass(frozen=True)
class Instance:
    """An instance of a known, non-module user class."""

    cls: ClassKey


@dataclass(frozen=True)
class Function:
    """A user function or method; `bound` when it came from `obj.method` (the receiver is `self`)."""

    key: FunctionKey
    bound: ClassKey | None = None


@dataclass(frozen=True)
class ClassObject:
    """A user class itself (calling it constructs an instance)."""

    cls: ClassKey


@dataclass(frozen=True)
class External:
    """A name from an installed library we do not analyse, e.g. `logging.Logger` or `torch.float32`."""

    name: str


Atom = str | Seq | Tup | Record | Mapping | Module | Instance | Function | ClassObject | External
TENSOR_LIKE = frozenset({TENSOR, ASSUMED, MASK, ASSUMED_MASK, NUMPY})
MASKS = frozenset({MASK, ASSUMED_MASK})
EVIDENT_TENSORS = frozenset({TENSOR, MASK, NUMPY})
BOOLS = frozenset({TRUE, FALSE})
PYTHON_NUMBERS = frozenset({TRUE, FALSE, INT, FLOAT, SIZE})
MAX_DEPTH = 3  # deeper nesting (lists of lists of lists) is widened to unknown
MAX_TUPLE = 16  # longer tuples are cut (their later items are not followed)


class Value:
    """An immutable union of atoms, each with the path condition under which it is present."""

    __slots__ = ("_hash", "_wide", "atoms")

    def __init__(self, atoms: dict[Atom, int]) -> None:
        self.atoms = atoms
        self._hash: int | None = None
        self._wide: Value | None = None  # `widen()`, kept: every summary lookup widens its arguments

    @classmethod
    def of(cls, *atoms: Atom, cond: int = 0) -> Value:
        return cls(dict.fromkeys(atoms, cond))

    def __iter__(self) -> Iterator[Atom]:
        return iter(self.atoms)

    def __contains__(self, atom: object) -> bool:
        return atom in self.atoms

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Value) and self.atoms == other.atoms

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self.atoms.items()))
        return self._hash

    def __repr__(self) -> str:
        return "Value(" + " | ".join(f"{a}" + (f"@{c}" if c else "") for a, c in self.atoms.items()) + ")"

    def __bool__(self) -> bool:
        return bool(self.atoms)

    def join(self, other: Value) -> Value:
        if not other.atoms or self is other:
            return self
        if not self.atoms:
            return other
        merged = dict(self.atoms)
        for atom, cond in other.atoms.items():
            merged[atom] = merged[atom] & cond if atom in merged else cond
        return Value(_merge_containers(merged))

    def under(self, cond: int) -> Value:
        """The same value, present only when `cond` holds too (assigned inside a branch)."""
        if not cond:
            return self
        return Value({atom: c | cond for atom, c in self.atoms.items()})

    def without(self, *atoms: Atom) -> Value:
        return Value({a: c for a, c in self.atoms.items() if a not in atoms})

    def only(self, allowed: Collection[Atom]) -> bool:
        """Every atom is one of `allowed` (and there is at least one)."""
        return bool(self.atoms) and all(atom in allowed for atom in self.atoms)

    def any_of(self, atoms: Iterable[Atom]) -> bool:
        return any(atom in self.atoms for atom in atoms)

    def cond_of(self, atoms: Iterable[Atom]) -> int:
        """The path condition under which one of `atoms` is present (0 if it is by default)."""
        conds = [c for a, c in self.atoms.items() if a in atoms]
        result = -1
        for cond in conds:
            result &= cond
        return result if conds else 0

    @property
    def is_tensor_like(self) -> bool:
        return any(atom in TENSOR_LIKE for atom in self.atoms)

    def items(self) -> Value:
        """What iterating over this value yields."""
        parts = [_item_of(atom).under(cond) for atom, cond in self.atoms.items()]
        return join_all(parts)

    def modules(self) -> list[Module]:
        return [atom for atom in self.atoms if isinstance(atom, Module)]

    def functions(self) -> list[Function]:
        return [atom for atom in self.atoms if isinstance(atom, Function)]

    def classes(self) -> list[ClassObject]:
        return [atom for atom in self.atoms if isinstance(atom, ClassObject)]

    def instances(self) -> list[Instance]:
        return [atom for atom in self.atoms if isinstance(atom, Instance)]

    def externals(self) -> list[External]:
        return [atom for atom in self.atoms if isinstance(atom, External)]

    def sequences(self) -> list[Value]:
        """What the list/tuple atoms hold (each a join of their items)."""
        return [atom.item for atom in self.atoms if isinstance(atom, (Seq, Tup))]

    def widen(self, depth: int = 0) -> Value:
        """Cut containers nested deeper than MAX_DEPTH, so fixpoints over call contexts terminate."""
        if depth == 0 and self._wide is not None:
            return self._wide
        if depth >= MAX_DEPTH:
            return Value.of(UNKNOWN)
        changed: dict[Atom, int] = {}
        for atom, cond in self.atoms.items():
            if isinstance(atom, Tup):
                items = tuple(item.widen(depth + 1) for item in atom.items[:MAX_TUPLE])
                atom = Tup(items, atom.fields[: len(items)])
            elif isinstance(atom, Seq):
                atom = Seq(atom.item.widen(depth + 1))
            elif isinstance(atom, Mapping):
                keyed = tuple((key, value.widen(depth + 1)) for key, value in atom.keyed)
                atom = Mapping(atom.value.widen(depth + 1), keyed)
            elif isinstance(atom, Module) and atom.items is not None:
                atom = Module(atom.cls, atom.name, atom.items.widen(depth + 1))
            changed[atom] = changed[atom] & cond if atom in changed else cond
        wide = Value(changed)
        if depth == 0:
            self._wide = wide  # never on `wide` itself: a value referring to itself is a cycle, never freed once frozen
        return wide


def _merge_containers(atoms: dict[Atom, int]) -> dict[Atom, int]:
    """One Seq, one Tup per length and one Mapping atom at most: `[t] if c else [1]` is a list of
    tensor-or-int; tuples of one length merge position by position (`out += (attn,)` under a flag leaves a
    tuple of each length, whose first items are still known); tuples joined with a Seq become one Seq."""
    containers = [a for a in atoms if isinstance(a, (Seq, Tup, Mapping))]
    if len(containers) < 2:  # most joins: nothing to merge
        return atoms
    seqs: list[Seq | Tup] = [a for a in containers if isinstance(a, Seq)]
    tups = [a for a in containers if isinstance(a, Tup)]
    maps = [a for a in containers if isinstance(a, Mapping)]
    lengths = {len(t.items) for t in tups}
    if len(seqs) < 2 and len(maps) < 2 and len(lengths) == len(tups) and not (seqs and tups):
        return atoms
    merged: dict[Atom, int] = {a: c for a, c in atoms.items() if not isinstance(a, (Seq, Tup, Mapping))}
    if tups and not seqs:
        for length in sorted(lengths):
            same = [t for t in tups if len(t.items) == length]
            positions = zip(*(t.items for t in same), strict=True)
            fields = same[0].fields if all(t.fields == same[0].fields for t in same) else ()
            merged[Tup(tuple(join_all(p) for p in positions), fields)] = _and_all(atoms[t] for t in same)
    else:
        seqs = [*seqs, *tups]
    if seqs:
        merged[Seq(join_all(s.item for s in seqs))] = _and_all(atoms[s] for s in seqs)
    if maps:
        merged[Mapping(join_all(m.value for m in maps), common_keys(maps))] = _and_all(atoms[m] for m in maps)
    return merged


def common_keys(maps: list[Mapping]) -> tuple[tuple[str, Value], ...]:
    """The keys every mapping knows by name, each with the join of their values."""
    keyed = [dict(m.keyed) for m in maps]
    common = [key for key, _ in maps[0].keyed if all(key in k for k in keyed)]
    return tuple((key, join_all(k[key] for k in keyed)) for key in common)


def _and_all(conds: Iterable[int]) -> int:
    result = -1
    for cond in conds:
        result &= cond
    return result


def _item_of(atom: Atom) -> Value:
    if isinstance(atom, (Seq, Tup)):
        return atom.item
    if isinstance(atom, Mapping):
        return Value.of(UNKNOWN)  # iterating a dict yields its keys
    if isinstance(atom, Module):
        return atom.items or Value.of(Module())  # nn.ModuleList / nn.Sequential: items are modules
    if atom in TENSOR_LIKE:
        return Value.of(atom)
    if atom == STR:
        return Value.of(STR)
    return Value.of(UNKNOWN)


def join_all(values: Iterable[Value]) -> Value:
    result = BOTTOM
    for value in values:
        result = result.join(value)
    return result


BOTTOM = Value({})
UNKNOWN_VALUE = Value.of(UNKNOWN)
TENSOR_VALUE = Value.of(TENSOR)
MASK_VALUE = Value.of(MASK)
DATA_VALUE = Value.of(DATA)
SIZE_VALUE = Value.of(SIZE)
BOOL_VALUE = Value.of(TRUE, FALSE)
TRUE_VALUE = Value.of(TRUE)
FALSE_VALUE = Value.of(FALSE)
INT_VALUE = Value.of(INT)
FLOAT_VALUE = Value.of(FLOAT)
STR_VALUE = Value.of(STR)
NONE_VALUE = Value.of(NONE)
OBJECT_VALUE = Value.of(OBJECT)
NUMPY_VALUE = Value.of(NUMPY)
SHAPE_VALUE = Value.of(Seq(SIZE_VALUE))
