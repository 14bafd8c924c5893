"""Summaries shared by the programs of one process: the flake8 plugin analyses each file as a program of its
own, and every one of them summarised the same context functions again (transformers' losses, masks and
caches: a third of the plugin's analysis on ten model folders) and walked the same modules' bodies for their
global names (a quarter). Both are shared the same way; "summary" below stands for either.

A summary is not a pure function of the function and its arguments: its walk asks the program for attribute
values, globals, other summaries, and the answers depend on what the program has walked so far. So a shared
summary carries the questions its own walk asked, in order, with the answers it got (a `Trace`). Another
program takes the summary only after asking the same questions itself and getting the same answers: its own
walk would then have gone exactly the same way. The first answer that differs sends it back to walking the
function: the questions asked before it are those its walk asks first, and a question is answered once per
program (memoized) or only reads, so asking them again changes nothing.

A walk may also assign attributes (`__init__` records `self.config`, and every file's program walked the same
base classes' constructors again: 15 % of the plugin's cost on 250 files of `transformers/models`). Its writes are
in the trace too, in their place among the questions, and taking the summary makes them again, so the questions
after a write are answered as its walk saw them. If an answer then differs, the writes made are undone before the
walk makes its own (`_undo_write`).

Not shared: a summary whose walk met Python's recursion limit, and one whose questions, writes or answers name a
file that either program lints (a linted file is parsed for its program alone and may hold an editor's unsaved
text).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from compile_lint.analysis.flow import Env, Flow
from compile_lint.analysis.index import ClassInfo, FileIndex, FunctionInfo
from compile_lint.analysis.program import LIST_ITEMS, Program, SourceLoader
from compile_lint.analysis.values import UNKNOWN_VALUE, Value
from compile_lint.config import Mode

# What a walk may ask of the program: the answers depend on what the program walked so far. A walk asks them
# directly or through the methods that resolve calls (`TRANSPARENT`), which read nothing else a program changes.
QUESTIONS = (
    "summary", "attribute", "list_items", "global_value", "import_value", "file_for_module", "string_table",
    "base_values", "instance_value", "is_module_class", "is_module_init", "module_reason", "method", "mro",
    "metaclasses", "transform_base", "class_info", "function", "functions", "classes", "index_of", "is_linted",
    "none_check", "closure_env", "passes_through", "returns_new_object", "training_value",
)  # fmt: skip
TRANSPARENT = (
    "call_targets", "call_value", "_call_atom", "_function_target", "_callbacks", "_transform_inverse",
    "bind_params", "entry_params", "_annotated", "setattr_targets", "class_value",
)  # fmt: skip
WRITES = ("record_attribute", "record_list_items")  # (class, ...): made again by a program that takes the summary
# Run only within an answer, or by the program for itself: a walk never calls them (it would lose sharing if it did).
ANSWERING = (
    "_resolve_decorators", "_decorator_kind", "_register", "_find_module", "_linted_module", "_find_linted_module",
    "_load_source", "_real_path", "_import_value", "_member", "_star_imported", "_find_mro", "_class_constant",
    "is_list_class", "_ensure_attribute", "_summarise", "_bind_globals", "_returns_argument", "_gives_back",
)  # fmt: skip
IDENTITIES = (FunctionInfo, ClassInfo, FileIndex)  # the same object, or not the same answer

Event = tuple[str, tuple[Any, ...], dict[str, Any], Any]  # method, arguments, keyword arguments, answer
Write = tuple[tuple[str, str], str, Value | None, Value | None]  # class, attribute, its value before and after


@dataclass
class Trace:
    """The questions one summary's own walk asked and the writes it made, in order; `shareable` unless it failed."""

    events: list[Event] = field(default_factory=list)
    shareable: bool = True


@dataclass
class Shared:
    """A function's summary (`value`, for `params`), or a module's globals (`value`, an Env), and its trace."""

    owner: FunctionInfo | FileIndex
    params: Env
    value: Any
    events: list[Event]
    linted: frozenset[str]  # the files the program that walked it linted
    paths: frozenset[str] | None = None  # the strings (so the files) its arguments, questions and answers name


class SharedSummaries:
    """The summaries of one process's programs, by function and (unwidened) parameter values, and the global
    names of its modules, by path."""

    def __init__(self) -> None:
        self.entries: dict[tuple[tuple[str, str], frozenset[tuple[str, Value]]], Shared] = {}
        self.modules: dict[str, Shared] = {}


class SharingProgram(Program):
    """A program that takes summaries from `shared` when its own answers allow it, and adds its own there."""

    def __init__(
        self, indexes: list[FileIndex], mode: Mode, load: SourceLoader | None, shared: SharedSummaries
    ) -> None:
        self._shared = shared
        super().__init__(indexes, mode, load)

    def _summarise(self, info: FunctionInfo, params: Env) -> Value:
        def walk(asking: _Asking) -> Value:
            try:
                return Flow(asking, self.files[info.path], info, params).run().widen()  # type: ignore[arg-type]
            except RecursionError:
                asking.trace.shareable = False
                return UNKNOWN_VALUE

        key = (info.key, frozenset(params.items()))
        return self._taken_or_walked(self._shared.entries, key, info, params, walk)  # type: ignore[no-any-return]

    def _bind_globals(self, index: FileIndex, env: Env, program: Program | None = None) -> None:
        def walk(asking: _Asking) -> Env:
            super(SharingProgram, self)._bind_globals(index, env, asking)  # type: ignore[arg-type]
            return dict(env)

        # Taken, the globals are bound here in the order the walk bound them; walked, they are bound already.
        env.update(self._taken_or_walked(self._shared.modules, index.path, index, {}, walk))

    def _taken_or_walked(
        self,
        store: dict[Any, Shared],
        key: object,
        owner: FunctionInfo | FileIndex,
        params: Env,
        walk: Callable[[_Asking], Any],
    ) -> Any:
        """The shared answer of `store[key]` if this program's answers to its questions are alike; otherwise what
        `walk` gives with this program seen through a recording view, kept in `store` if it may be shared."""
        found = store.get(key)
        if found is not None and found.owner is owner and self._answers_alike(found):
            return found.value
        asking = _Asking(self)
        value = walk(asking)
        if self._shareable(owner, asking.trace):
            store[key] = Shared(owner, dict(params), value, asking.trace.events, self.linted)
        return value

    def _shareable(self, owner: FunctionInfo | FileIndex, trace: Trace) -> bool:
        """Not if the walk failed, nor if it or a question about, or answered with, a function, class or
        file this program lints: not to be taken again (and not to keep that file's tree alive)."""
        return (
            trace.shareable
            and owner.path not in self.linted
            and not any(
                isinstance(item, IDENTITIES) and item.path in self.linted
                for _, args, _, answer in trace.events
                for item in (*args, answer)
            )
        )

    def _answers_alike(self, found: Shared) -> bool:
        """Ask the shared summary's questions again and make its writes, in order: True if every answer is the one
        it got; otherwise the writes are undone."""
        if found.paths is None:  # named files are looked for only in the summaries taken again (a few)
            found.paths = frozenset(self._paths_named(found.params, found.events))
        paths = found.paths
        if not paths.isdisjoint(found.linted) or not paths.isdisjoint(self.linted):
            return False
        made: list[Write] = []
        try:
            for name, args, keywords, answer in found.events:
                if name in WRITES:
                    made.append(self._write_again(name, args, keywords))
                elif not _identical(getattr(self, name)(*args, **keywords), answer):
                    break
            else:
                return True
        except RecursionError:
            pass
        for write in reversed(made):
            self._undo_write(*write)
        return False

    def _write_again(self, name: str, args: tuple[Any, ...], keywords: dict[str, Any]) -> Write:
        """A shared summary's write made here, with the attribute's value before and after it (to undo it)."""
        cls, attribute = args[0], LIST_ITEMS if name == "record_list_items" else args[1]
        before = self._attributes.get(cls, {}).get(attribute)
        getattr(self, name)(*args, **keywords)
        return cls, attribute, before, self._attributes.get(cls, {}).get(attribute)

    def _undo_write(self, cls: tuple[str, str], attribute: str, before: Value | None, after: Value | None) -> None:
        """The attribute as it was before a write of a summary not taken after all. If a walk that answered a later
        question wrote it too, it is left as it is: that walk is not made again (its summary is memoized), and
        writing the same value twice changes nothing."""
        attributes = self._attributes.get(cls, {})
        if attributes.get(attribute) is not after:
            return
        if before is not None:
            attributes[attribute] = before
            return
        attributes.pop(attribute, None)
        if not attributes:
            self._attributes.pop(cls, None)

    @staticmethod
    def _paths_named(params: Env, events: list[Event]) -> Iterator[str]:
        """Every string in the arguments, questions and answers: among them each file they name (keys of
        functions and classes are (path, name), program objects give their own)."""
        yield from _strings(params)
        for _, args, keywords, answer in events:
            yield from _strings((args, keywords, answer))


class _Asking:
    """The program as one summary's own walk sees it: each question it asks is answered by the program and
    written down with its answer. What answering asks in turn is the program's own business (its answers are
    memoized, or another summary's walk with its own trace), so it goes to the program directly."""

    def __init__(self, program: SharingProgram) -> None:
        self.program = program
        self.trace = Trace()

    def __getattr__(self, name: str) -> Any:
        """The program's data (the methods in `TRANSPARENT` read it); a method nobody sorted is answered but the
        trace is not shared, as its answer was not written down."""
        found = getattr(self.program, name)
        if callable(found):
            self.trace.shareable = False
        return found


def _question(name: str) -> Callable[..., Any]:
    def question(self: _Asking, *args: Any, **keywords: Any) -> Any:
        answer = getattr(self.program, name)(*args, **keywords)
        # Copies of what a caller may change later (parameter values, lists of keys).
        self.trace.events.append((name, tuple(map(_copied, args)), keywords, _copied(answer)))
        return answer

    question.__name__ = question.__qualname__ = name
    return question


for _name in (*QUESTIONS, *WRITES):  # a write is written down like a question (its answer: None)
    setattr(_Asking, _name, _question(_name))
for _name in TRANSPARENT:  # run with the walk's view as `self`, so the questions they ask are written down too
    setattr(_Asking, _name, getattr(Program, _name))


def _copied(value: object) -> object:
    if isinstance(value, dict):
        return dict(value)
    return list(value) if isinstance(value, list) else value


def _identical(a: object, b: object) -> bool:
    """Equal, and in the same order (the order of a value's atoms shows in messages); program objects by identity."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, IDENTITIES):
        return False
    if isinstance(a, Value):
        assert isinstance(b, Value)
        return len(a.atoms) == len(b.atoms) and all(
            ca == cb and _identical(xa, xb) for (xa, ca), (xb, cb) in zip(a.atoms.items(), b.atoms.items(), strict=True)
        )
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple))
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return len(a) == len(b) and all(
            ka == kb and _identical(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if _ours(a):
        return all(_identical(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))  # type: ignore[arg-type]
    return a == b


def _strings(value: object) -> Iterator[str]:
    """The strings `value` holds: in tuples (keys of functions and classes), atoms, call targets; the path of a
    program object."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, IDENTITIES):
        yield value.path
    elif isinstance(value, Value):
        for atom in value.atoms:
            yield from _strings(atom)
    elif isinstance(value, (list, tuple, frozenset, set)):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif _ours(value):
        for f in fields(value):  # type: ignore[arg-type]
            yield from _strings(getattr(value, f.name))


def _ours(value: object) -> bool:
    """An instance of one of the analysis's dataclasses (an atom, a call target), never a libcst node."""
    return is_dataclass(value) and not isinstance(value, type) and type(value).__module__.startswith("compile_lint.")
