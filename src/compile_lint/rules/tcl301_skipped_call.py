"""TCL301: a call Dynamo skips or cannot trace (clocks, Python RNG, random generator objects, datetime, json,
pickle, frames, pdb)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from compile_lint.analysis.tensors import TORCH_GENERATOR, dotted_code, short_code
from compile_lint.analysis.values import External, Value
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule
from compile_lint.versions import TorchVersion

SKIPPED = "GB0007"  # Attempted to call function marked as skipped
UNSUPPORTED_METHOD = "GB0156"  # Unsupported method call (inside the library code Dynamo inlines)
DATA_DEPENDENT = "GB0033"  # Data dependent operator: an np.random draw returned as a Python scalar
UNSUPPORTED_NUMPY = "GB0294"  # attempted to trace numpy function unsupported by PyTorch
NON_TENSOR_OP = "GB0208"  # torch.* op returned non-Tensor
NO_TRACEABLE_CALL = "GB4818"  # call to a callable object with no traceable __call__ (json.loads, torch 2.14)
UNSUPPORTED_HASATTR = "GB0150"  # Unsupported hasattr call (inside inspect.unwrap, torch 2.14)
INLINE_SKIPPED = "GB0008"  # Attempted to inline function marked as skipped (SeedSequence.generate_state)
OPAQUE_OBJECT = "GB0363"  # An opaque object was created in the middle of the program (torch.Generator)
GENERATOR_METHOD = "GB7650"  # torch.Generator method
NO_PROXY = "GB0055"  # Failed to convert args/kwargs to proxy (a torch.Generator passed as `generator=`)
RNG_OBJECTS = (INLINE_SKIPPED, OPAQUE_OBJECT, GENERATOR_METHOD, NO_PROXY)  # random generator objects (both versions)


@dataclass(frozen=True)
class Skipped:
    """What Dynamo does with one call: the break it logs (None: it traces the call, but the results
    differ from eager), why, and what to write instead."""

    gb_code: str | None
    reason: str
    fix: str


TIME = Skipped(
    SKIPPED,
    "is a C function of the `time` module, which Dynamo skips",
    "Read the clock outside the compiled function (time the call to it, not its body) and pass any "
    "value you need in as an argument.",
)
SLEEP = Skipped(
    SKIPPED,
    "is a C function of the `time` module, which Dynamo skips",
    "Sleep outside the compiled function, before or after calling it.",
)
RANDOM_SEED = Skipped(
    SKIPPED,
    "reseeds Python's global RNG, which Dynamo skips",
    "Seed once, outside the compiled function, before you call it.",
)
CLOCK = Skipped(
    UNSUPPORTED_METHOD,
    "reads the wall clock through a method Dynamo cannot trace",
    "Read the date outside the compiled function and pass it in as an argument.",
)
JSON = Skipped(
    UNSUPPORTED_METHOD,
    "runs the json encoder/decoder, which Dynamo cannot trace",
    "Serialize outside the compiled function: return the tensors and call json on the result.",
)
JSON_DECODER_2_14 = Skipped(
    NO_TRACEABLE_CALL,
    "runs the json decoder, whose scanner Dynamo cannot call",
    "Parse outside the compiled function and pass the values in.",
)
SIGNATURE_OF_DISABLED = Skipped(
    UNSUPPORTED_HASATTR,
    "inspects a `@torch.compiler.disable` function: `inspect.unwrap` calls `hasattr` on it, which Dynamo cannot trace",
    "Read the signature once, outside the compiled function (e.g. at import), and use the stored value.",
)
FRAME = Skipped(
    SKIPPED,
    "inspects the interpreter's frames, which Dynamo skips",
    "Do frame introspection outside the compiled function, or guard it with `if not torch.compiler.is_compiling():`.",
)
DEBUGGER = Skipped(
    SKIPPED,
    "starts the debugger, which Dynamo skips (the breakpoint then stops in eager code)",
    'Remove the breakpoint, or debug eagerly with `torch.compiler.set_stance("force_eager")` around the call.',
)
TORCH_SEED = Skipped(
    SKIPPED,
    "changes torch's global RNG state, which Dynamo skips",
    "Seed (or save/restore the RNG state) outside the compiled function, before you call it.",
)
PICKLE = Skipped(
    SKIPPED,
    "is a C function of the `pickle` module, which Dynamo skips",
    "Serialize outside the compiled function, or key a cache on values Dynamo can hash (a tuple of the "
    "arguments, `tuple(sorted(kwargs.items()))` of plain values).",
)
JIT_ISINSTANCE = Skipped(
    SKIPPED,
    "is TorchScript's type refinement, which Dynamo skips (measured on 2.13 and 2.14)",
    "Use the builtin `isinstance(...)` (TorchScript accepts it for refinement too), or keep the check out of the region.",
)
GENERATOR_CREATED = Skipped(
    OPAQUE_OBJECT,
    "creates a `torch.Generator`, an opaque object Dynamo cannot create inside a graph",
    "Create the generator once, outside the compiled function; better, draw with the global RNG "
    "(`torch.manual_seed` outside, `torch.randn(...)` inside), which Dynamo traces.",
)
GENERATOR_FIX = (
    "Draw with the global RNG inside the compiled function (seed it outside), or draw the noise with the "
    "generator before the call and pass the tensor in."
)
TORCH_GENERATOR_METHOD = Skipped(GENERATOR_METHOD, "is a method of a `torch.Generator`, which Dynamo cannot trace",
                                 GENERATOR_FIX)  # fmt: skip
NUMPY_RANDOM_OBJECT = Skipped(
    UNSUPPORTED_METHOD,
    "builds a numpy random generator object, which Dynamo cannot trace (only the `np.random.*` draw "
    "functions go through torch._numpy)",
    "Draw with torch (`torch.Generator` outside the region, or the global RNG inside), or build the numpy "
    "object and draw from it outside the compiled function and pass the values in.",
)
NUMPY_RANDOM_METHOD = Skipped(
    UNSUPPORTED_METHOD,
    "is a method of a numpy random generator object, which Dynamo cannot trace",
    NUMPY_RANDOM_OBJECT.fix,
)
NUMPY_GENERATE_STATE = Skipped(INLINE_SKIPPED, "is a method of `np.random.SeedSequence`, which Dynamo skips",
                               NUMPY_RANDOM_OBJECT.fix)  # fmt: skip
TORCH_INITIAL_SEED = Skipped(
    NON_TENSOR_OP,
    "returns a Python int, not a tensor",
    "Read the seed outside the compiled function and pass it in.",
)

# torch draws Dynamo traces into the graph, for the `random` functions that have one.
RANDOM_REPLACEMENTS = {
    "random": "torch.rand(())",
    "uniform": "torch.empty(()).uniform_(a, b)",
    "gauss": "torch.randn(()) * sigma + mu",
    "normalvariate": "torch.randn(()) * sigma + mu",
    "expovariate": "torch.empty(()).exponential_(lambd)",
    "shuffle": "t[torch.randperm(len(t))]",
    "sample": "torch.randperm(n)[:k]",
    "choices": "torch.multinomial(weights, k, replacement=True)",
    "getrandbits": "torch.randint(2**k, ())",
}
# Resolved dotted name -> behaviour, measured with torch 2.13 and 2.14 (see fixtures/skipped_calls.py).
CALLS: dict[str, Skipped] = {
    "datetime.datetime.now": CLOCK,
    "datetime.datetime.utcnow": CLOCK,
    "datetime.datetime.today": CLOCK,
    "datetime.date.today": CLOCK,
    "json.dumps": JSON,
    "json.loads": JSON,
    "json.dump": JSON,
    "json.load": JSON,
    "inspect.currentframe": FRAME,
    "torch.jit.isinstance": JIT_ISINSTANCE,
    "inspect.stack": FRAME,
    "sys._getframe": FRAME,
    "pdb.set_trace": DEBUGGER,
    "pickle.dumps": PICKLE,
    "pickle.loads": PICKLE,
    "time.sleep": SLEEP,
    "torch.manual_seed": TORCH_SEED,
    "torch.random.manual_seed": TORCH_SEED,
    "torch.get_rng_state": TORCH_SEED,
    "torch.set_rng_state": TORCH_SEED,
    "torch.initial_seed": TORCH_INITIAL_SEED,
    "torch.Generator": GENERATOR_CREATED,
    "torch._C.Generator": GENERATOR_CREATED,
}
# Differences from 2.14 on, measured (docs/torch-versions.md).
CALLS_2_14: dict[str, Skipped] = {"json.loads": JSON_DECODER_2_14}
SIGNATURE_CALLS = frozenset({"inspect.signature", "inspect.unwrap"})

# `random` functions Dynamo traces without a break; all others are skipped. Measured (tests/test_python_random.py):
# the int draws give what eager gives; a float draw comes out wrong under inductor, the default backend
# (garbage such as -1.6e-33; right with backend="eager"). torch 2.14 adds `random`, `shuffle`, `sample`, `seed`.
RANDOM_INT_TRACED = frozenset({"randint", "randrange"})
INDUCTOR_GARBAGE = (
    "is traced without a graph break, but inductor (the default backend) computes with a wrong value in "
    'its place (measured: garbage such as -1.6e-33; backend="eager" gets the draw)'
)
RANDOM_TRACED_WRONG: dict[TorchVersion, dict[str, str]] = {
    (2, 13): {"uniform": INDUCTOR_GARBAGE},
    (2, 14): {
        "uniform": INDUCTOR_GARBAGE,
        "random": INDUCTOR_GARBAGE,
        "shuffle": "is traced without a graph break, but shuffles in the same order on every call: Dynamo "
        "draws the permutation once, while compiling",
        "sample": "is traced without a graph break, but returns the same sample on every call: Dynamo draws "
        "it once, while compiling",
        "seed": "is traced without a graph break, but the `random` draws after it in the region do not match "
        "eager (the first call gets another value) and the global RNG is left in another state",
    },
}

# np.random under Dynamo goes through torch._numpy.random, which has only these functions.
NUMPY_RANDOM_TRACED = frozenset(
    {"seed", "shuffle", "random_sample", "sample", "random", "rand", "randn", "normal", "randint", "uniform", "choice"}
)
# Where each traced function takes its output shape; without one it returns a Python scalar,
# which Dynamo cannot produce (GB0033). `rand`/`randn` take the shape as *args.
NUMPY_SIZE_POSITION = {"random_sample": 0, "sample": 0, "random": 0, "normal": 2, "randint": 2, "uniform": 2}
NUMPY_SILENT = frozenset({"seed", "shuffle"})
NUMPY_SCALAR = Skipped(
    DATA_DEPENDENT,
    "without a size returns a Python scalar drawn at run time, which Dynamo cannot trace",
    "Draw a tensor instead: `torch.rand(())` / `torch.randn(())` / `torch.randint(low, high, ())`, or "
    "pass a size (`np.random.rand(1)`) so Dynamo traces the draw.",
)
NUMPY_CHOICE = Skipped(
    DATA_DEPENDENT,
    "is a data-dependent draw Dynamo cannot trace, with or without a size",
    "Draw indices with torch: `torch.randint(n, (k,))`, or `torch.multinomial(p, k)` for weighted choices.",
)
NUMPY_UNSUPPORTED = Skipped(
    UNSUPPORTED_NUMPY,
    "is not part of the np.random API Dynamo traces (torch._numpy.random)",
    "Use the torch equivalent (`torch.randperm`, `torch.randn`, `torch.distributions`), or draw "
    "outside the compiled function and pass the result in.",
)


def numpy_random(function: str, node: cst.Call) -> Skipped | None:
    """How Dynamo handles `np.random.<function>(...)` called with these arguments."""
    if function in NUMPY_SILENT:
        return None
    if function not in NUMPY_RANDOM_TRACED:
        return NUMPY_UNSUPPORTED
    if function == "choice":
        return NUMPY_CHOICE
    if function in ("rand", "randn"):
        sized = any(arg.keyword is None for arg in node.args)
    else:
        position = NUMPY_SIZE_POSITION.get(function)
        positional = [arg for arg in node.args if arg.keyword is None and arg.star == ""]
        sized = any(arg.keyword is not None and arg.keyword.value == "size" for arg in node.args) or (
            position is not None and len(positional) > position
        )
    return None if sized else NUMPY_SCALAR


def python_random(function: str, version: TorchVersion) -> Skipped | None:
    """Python's `random.<function>()`: traced like eager (None), skipped (a break), or traced wrongly."""
    if function in RANDOM_INT_TRACED:
        return None
    replacement = RANDOM_REPLACEMENTS.get(function)
    instead = f"`{replacement}` instead of `random.{function}()`" if replacement else "a torch draw"
    fix = (
        RANDOM_SEED.fix
        if function == "seed"
        else (
            f"Use torch's RNG, which Dynamo traces into the graph ({instead}), or draw outside the compiled "
            "function and pass the value in."
        )
    )
    wrong = RANDOM_TRACED_WRONG[version].get(function)
    if wrong:
        return Skipped(None, wrong, fix)
    if function == "seed":
        return RANDOM_SEED
    return Skipped(SKIPPED, "draws from Python's global RNG, which Dynamo skips", fix)


# Modules whose every call this rule decides (TCL310 leaves them alone, though Dynamo's skip list has `random`).
OWNED_MODULES = frozenset({"time", "random", "numpy.random"})


def claims(full: str) -> bool:
    """Does TCL301 decide calls of the resolved name `full` (whether or not they break)?"""
    return full in CALLS or full in CALLS_2_14 or full.rpartition(".")[0] in OWNED_MODULES


def method_behaviour(receiver: Value, method: str) -> Skipped | None:
    """A method call on a random generator object the analysis knows (a `torch.Generator`, a numpy
    `SeedSequence`/`Generator`/`RandomState`), or None."""
    names = {atom.name for atom in receiver if isinstance(atom, External)}
    if TORCH_GENERATOR in names:
        return TORCH_GENERATOR_METHOD
    if any(name.startswith("numpy.random.") and name.endswith("()") for name in names):
        return NUMPY_GENERATE_STATE if method == "generate_state" else NUMPY_RANDOM_METHOD
    return None


def behaviour(full: str, node: cst.Call, version: TorchVersion) -> Skipped | None:
    """What Dynamo does with a call of the resolved name `full`, or None if it traces it like eager."""
    if version >= (2, 14) and full in CALLS_2_14:
        return CALLS_2_14[full]
    if full in CALLS:
        return CALLS[full]
    module, _, function = full.rpartition(".")
    if module == "numpy.random" and function[:1].isupper():  # `SeedSequence`, `RandomState`, `PCG64`, ...
        return NUMPY_RANDOM_OBJECT
    if not function or not function[0].islower():  # classes (`random.Random`) are not calls we know
        return None
    if module == "time":
        return TIME
    if module == "random":
        return python_random(function, version)
    if module == "numpy.random":
        return numpy_random(function, node)
    return None


class SkippedCall(Rule):
    code = "TCL301"
    name = "skipped-call"
    summary = "Call of a function Dynamo skips or cannot trace (clock, Python RNG, generator objects, datetime, json, frames, pdb)"
    gb_codes_by_version = {
        (2, 13): (SKIPPED, UNSUPPORTED_METHOD, DATA_DEPENDENT, UNSUPPORTED_NUMPY, NON_TENSOR_OP, *RNG_OBJECTS),
        (2, 14): (
            SKIPPED,
            UNSUPPORTED_METHOD,
            DATA_DEPENDENT,
            UNSUPPORTED_NUMPY,
            NON_TENSOR_OP,
            *RNG_OBJECTS,
            NO_TRACEABLE_CALL,
            UNSUPPORTED_HASATTR,
        ),
    }
    gb_codes = gb_codes_by_version[(2, 14)]
    fix = "Move the call out of the compiled function and pass its result in (each finding names the replacement)."
    what = (
        "Flags calls, resolved through the file's imports, that Dynamo refuses to trace, or traces into "
        "results that differ from eager: `time.*` (`time.time`, `perf_counter`, `sleep`, ...), Python's "
        "`random.*` except `randint` and `randrange`, `np.random.*` draws that return a Python scalar or lie "
        "outside torch._numpy, `datetime.datetime.now/utcnow/today`, `json.dumps/loads/dump/load`, `pickle.dumps/loads`, "
        "`inspect.currentframe`, `inspect.stack`, `sys._getframe`, `pdb.set_trace`, torch's global RNG state "
        "(`torch.manual_seed`, `get_rng_state`, `set_rng_state`, `initial_seed`), random generator objects "
        "(`torch.Generator(...)`, its methods, a draw with `generator=` one; numpy's `SeedSequence`, `RandomState`, "
        "`default_rng()` and the methods of what they return) and, with torch 2.14, "
        "`inspect.signature` of a `@torch.compiler.disable` function of the same file. "
        "`re`, `os.environ`, `math` on constants, `itertools` and `inspect.signature` of other functions "
        "trace fine and are not flagged."
    )
    why = (
        "Dynamo cannot put these calls into a graph: `time` functions, Python's global RNG, frame access, "
        "the debugger, `pickle` and the RNG-state functions are on its skip list (GB0007); `datetime.now` and json "
        "reach methods it does not support (GB0156; `json.loads` gives GB4818 from torch 2.14 on); a scalar "
        "`np.random` draw is data-dependent (GB0033) and other np.random functions are not in torch._numpy "
        "(GB0294); `torch.initial_seed` returns an int (GB0208); with torch 2.14, `inspect.signature` of a "
        "disabled function calls `hasattr` on it (GB0150). A `torch.Generator` is an opaque object Dynamo cannot "
        "create in a graph (GB0363), call methods of (GB7650) or pass to an op as `generator=` (GB0055, also for "
        "one passed in); numpy's generator objects and their methods are not in torch._numpy (GB0156; "
        "`SeedSequence.generate_state` is skipped, GB0008). Each ends the graph, runs the call eagerly and "
        "starts a new graph. Measured: `random.randint/randrange`, `np.random.seed/shuffle` and sized draws "
        "such as `np.random.rand(3)` are traced and draw what eager draws. Some calls are traced without a "
        "break but give other results than eager, which is worse: `random.uniform` (and `random.random` "
        "from torch 2.14 on) compute with garbage under inductor, the default backend; torch 2.14's "
        "`random.shuffle/sample` give the same result on every call, and its draws after `random.seed` differ."
    )
    example = (
        "import time\n\n@torch.compile\ndef step(x):\n    start = time.perf_counter()\n    y = x.relu()\n"
        "    elapsed = time.perf_counter() - start\n    return y\n"
    )
    fixed_example = (
        "import time\n\n@torch.compile\ndef step(x):\n    return x.relu()\n\n"
        "def timed_step(x):\n    start = time.perf_counter()\n    y = step(x)\n"
        "    return y, time.perf_counter() - start\n"
    )
    invalid = (
        Example("from time import perf_counter\n\n@torch.compile\ndef f(x):\n    t = perf_counter()\n    return x\n"),
        Example("import random\n\n@torch.compile\ndef f(x):\n    return x * random.random()\n"),
        Example("import random\n\n@torch.compile\ndef f(x):\n    return x * random.uniform(0.0, 1.0)\n"),
        Example("import random\n\n@torch.compile\ndef f(x):\n    return x * random.gauss(0.0, 1.0)\n"),
        Example("import random\n\n@torch.compile\ndef f(x, order):\n    random.shuffle(order)\n    return x[order]\n"),
        Example("import numpy as np\n\n@torch.compile\ndef f(x):\n    return x + np.random.rand()\n"),
        Example("import json\n\n@torch.compile\ndef f(x):\n    n = json.loads('1')\n    return x * n\n"),
        Example(
            "import inspect\n\n@torch.compiler.disable\ndef helper(t):\n    return t\n\n"
            "@torch.compile\ndef f(x):\n    return x * len(inspect.signature(helper).parameters)\n",
            versions=((2, 14),),
        ),
        Example(
            "from datetime import datetime\n\n@torch.compile\ndef f(x):\n    stamp = datetime.now()\n    return x\n"
        ),
        Example("import json\n\n@torch.compile\ndef f(x):\n    s = json.dumps({'a': 1})\n    return x\n"),
        Example("import sys\n\n@torch.compile\ndef f(x):\n    frame = sys._getframe()\n    return x\n"),
        Example(
            "import pdb\n\nclass M(nn.Module):\n    def forward(self, x):\n        pdb.set_trace()\n        return x\n"
        ),
        Example("@torch.compile\ndef f(x):\n    torch.manual_seed(0)\n    return x + torch.rand(3)\n"),
        Example(
            "@torch.compile\ndef f(x, seed):\n    g = torch.Generator().manual_seed(seed)\n"
            "    return x + torch.randn(3, generator=g)\n"
        ),
        Example(
            "import numpy as np\n\n@torch.compile\ndef f(x):\n    s = np.random.SeedSequence(0)\n"
            "    a, b = s.generate_state(2)\n    return x + 1\n"
        ),
    )
    valid = (
        Example("import random\n\n@torch.compile\ndef f(x):\n    return x * random.randint(1, 3)\n"),
        Example("import inspect\n\n@torch.compiler.disable\ndef helper(t):\n    return t\n\n"
                "@torch.compile\ndef f(x):\n    return x * len(inspect.signature(helper).parameters)\n", versions=((2, 13),)),
        Example("import numpy as np\n\n@torch.compile\ndef f(x):\n    return x + torch.from_numpy(np.random.rand(3))\n"),
        Example("import inspect, os, re\n\n@torch.compile\ndef f(x):\n    n = len(inspect.signature(f).parameters)\n"
                "    home = os.environ.get('HOME', '')\n    m = re.match(r'a+', 'aaa')\n    return x * n\n"),
        Example("import time\n\ndef train(model, x):\n    start = time.time()\n    return model(x), time.time() - start\n"),
        Example("@torch.compile\ndef f(x):\n    return x + torch.rand(3)\n"),
        Example("@torch.compile\ndef f(x, generator=None):\n    return x + torch.rand(3, generator=generator)\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        self._generator_argument(node, ctx)
        if isinstance(node.func, cst.Attribute):  # a method of a random generator object
            method = method_behaviour(ctx.facts.value(node.func.value), node.func.attr.value)
            if method is not None:
                # on the method's name when the receiver is a call (`torch.Generator(d).manual_seed(s)`): the
                # construction's own finding starts where the call does
                at = node.func.attr if isinstance(node.func.value, cst.Call) else node
                self._report(at, ctx, f"`{short_code(node)}`", method)
                return
        head = node.func
        while isinstance(head, cst.Attribute):
            head = head.value
        if not isinstance(head, cst.Name) or head.value not in ctx.imports.aliases:
            return  # only names that come from an import: a local `random` is not the module
        full = ctx.resolve(node.func)
        if full in SIGNATURE_CALLS:
            found = self._signature(node, ctx)
        else:
            found = behaviour(full, node, ctx.torch_version) if full else None
        if found is None:
            return
        written = dotted_code(node.func)
        self._report(node, ctx, f"`{written}()`" if written == full else f"`{written}()` ({full})", found)

    def _report(self, node: cst.BaseExpression, ctx: RuleContext, shown: str, found: Skipped) -> None:
        message = f"{shown} {found.reason}"
        if found.gb_code:
            message += f": the graph breaks here ({found.gb_code})"
        ctx.report(self, node, message, gb_codes=(found.gb_code,) if found.gb_code else (), fix=found.fix)

    def _generator_argument(self, node: cst.Call, ctx: RuleContext) -> None:
        """`torch.randn(..., generator=g)` with a `torch.Generator`: Dynamo cannot pass the generator to
        the graph's op (measured for one made in the region and for one passed in)."""
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value != "generator":
                continue
            if External(TORCH_GENERATOR) not in ctx.facts.value(arg.value) or not _torch_op(node, ctx):
                return
            ctx.report(
                self,
                node,
                f"`{short_code(node)}` draws with a `torch.Generator`, which Dynamo cannot pass to a graph op: "
                f"the graph breaks here ({NO_PROXY})",
                gb_codes=(NO_PROXY,),
                fix=GENERATOR_FIX,
            )
            return

    def _signature(self, node: cst.Call, ctx: RuleContext) -> Skipped | None:
        """`inspect.signature(f)` of a function the file disables: a break from torch 2.14 on."""
        if ctx.torch_version < (2, 14) or not node.args or ctx.program is None:
            return None
        functions = ctx.facts.value(node.args[0].value).functions()
        disabled = any((info := ctx.program.function(f.key)) is not None and info.disabled for f in functions)
        return SIGNATURE_OF_DISABLED if disabled else None


def _torch_op(node: cst.Call, ctx: RuleContext) -> bool:
    """A torch function (`torch.randn`) or a tensor method (`t.normal_`), not a user function."""
    if isinstance(node.func, cst.Attribute) and ctx.facts.value(node.func.value).is_tensor_like:
        return True
    return (ctx.resolve(node.func) or "").startswith("torch.")


RULE = SkippedCall()
