"""TCL301: a call Dynamo skips or cannot trace (clocks, Python RNG, datetime, json, frames, pdb)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from compile_lint.analysis.tensors import dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

SKIPPED = "GB0007"  # Attempted to call function marked as skipped
UNSUPPORTED_METHOD = "GB0156"  # Unsupported method call (inside the library code Dynamo inlines)
DATA_DEPENDENT = "GB0033"  # Data dependent operator: an np.random draw returned as a Python scalar
UNSUPPORTED_NUMPY = "GB0294"  # attempted to trace numpy function unsupported by PyTorch
NON_TENSOR_OP = "GB0208"  # torch.* op returned non-Tensor


@dataclass(frozen=True)
class Skipped:
    """What Dynamo does with one call: the break it logs, why, and what to write instead."""

    gb_code: str
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
TORCH_INITIAL_SEED = Skipped(
    NON_TENSOR_OP,
    "returns a Python int, not a tensor",
    "Read the seed outside the compiled function and pass it in.",
)

# torch draws Dynamo traces into the graph, for the `random` functions that have one.
RANDOM_REPLACEMENTS = {
    "random": "torch.rand(())",
    "gauss": "torch.randn(()) * sigma + mu",
    "normalvariate": "torch.randn(()) * sigma + mu",
    "expovariate": "torch.empty(()).exponential_(lambd)",
    "shuffle": "t[torch.randperm(len(t))]",
    "sample": "torch.randperm(n)[:k]",
    "choices": "torch.multinomial(weights, k, replacement=True)",
    "getrandbits": "torch.randint(2**k, ())",
}
# Resolved dotted name -> behaviour, all measured with torch 2.13 (see fixtures/skipped_calls.py).
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
    "inspect.stack": FRAME,
    "sys._getframe": FRAME,
    "pdb.set_trace": DEBUGGER,
    "time.sleep": SLEEP,
    "random.seed": RANDOM_SEED,
    "torch.manual_seed": TORCH_SEED,
    "torch.random.manual_seed": TORCH_SEED,
    "torch.get_rng_state": TORCH_SEED,
    "torch.set_rng_state": TORCH_SEED,
    "torch.initial_seed": TORCH_INITIAL_SEED,
}
# Dynamo models these three `random` functions in the graph; every other one is skipped.
RANDOM_TRACED = frozenset({"randint", "randrange", "uniform"})

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


def python_random(function: str) -> Skipped:
    replacement = RANDOM_REPLACEMENTS.get(function)
    instead = f"`{replacement}` instead of `random.{function}()`" if replacement else "a torch draw"
    return Skipped(
        SKIPPED,
        "draws from Python's global RNG, which Dynamo skips",
        f"Use torch's RNG, which Dynamo traces into the graph ({instead}; `random.randint`, "
        "`randrange` and `uniform` also trace), or draw outside the compiled function and pass the value in.",
    )


# Modules whose every call this rule decides (TCL310 leaves them alone, though Dynamo's skip list has `random`).
OWNED_MODULES = frozenset({"time", "random", "numpy.random"})


def claims(full: str) -> bool:
    """Does TCL301 decide calls of the resolved name `full` (whether or not they break)?"""
    return full in CALLS or full.rpartition(".")[0] in OWNED_MODULES


def behaviour(full: str, node: cst.Call) -> Skipped | None:
    """What Dynamo does with a call of the resolved name `full`, or None if it traces it."""
    if full in CALLS:
        return CALLS[full]
    module, _, function = full.rpartition(".")
    if not function or not function[0].islower():  # classes (`random.Random`) are not calls we know
        return None
    if module == "time":
        return TIME
    if module == "random":
        return None if function in RANDOM_TRACED else python_random(function)
    if module == "numpy.random":
        return numpy_random(function, node)
    return None


class SkippedCall(Rule):
    code = "TCL301"
    name = "skipped-call"
    summary = "Call of a function Dynamo skips or cannot trace (clock, Python RNG, datetime, json, frames, pdb)"
    gb_codes = (SKIPPED, UNSUPPORTED_METHOD, DATA_DEPENDENT, UNSUPPORTED_NUMPY, NON_TENSOR_OP)
    fix = "Move the call out of the compiled function and pass its result in (each finding names the replacement)."
    what = (
        "Flags calls, resolved through the file's imports, that Dynamo refuses to trace: `time.*` "
        "(`time.time`, `perf_counter`, `sleep`, ...), Python's `random.*` except `randint`, `randrange` and "
        "`uniform`, `np.random.*` draws that return a Python scalar or lie outside torch._numpy, "
        "`datetime.datetime.now/utcnow/today`, `json.dumps/loads/dump/load`, `inspect.currentframe`, "
        "`inspect.stack`, `sys._getframe`, `pdb.set_trace`, and torch's global RNG state "
        "(`torch.manual_seed`, `get_rng_state`, `set_rng_state`, `initial_seed`). "
        "`re`, `os.environ`, `math` on constants, `itertools` and `inspect.signature` trace fine and are not flagged."
    )
    why = (
        "Dynamo cannot put these calls into a graph: `time` functions, Python's global RNG, frame access, "
        "the debugger and the RNG-state functions are on its skip list (GB0007); `datetime.now` and json "
        "reach methods it does not support (GB0156); a scalar `np.random` draw is data-dependent "
        "(GB0033) and other np.random functions are not in torch._numpy (GB0294); `torch.initial_seed` "
        "returns an int (GB0208). Each ends the graph, runs the call eagerly and starts a new graph. "
        "Measured with torch 2.13: `random.randint/randrange/uniform`, `np.random.seed/shuffle` and "
        "sized draws such as `np.random.rand(3)` are traced and do not break."
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
        Example("import numpy as np\n\n@torch.compile\ndef f(x):\n    return x + np.random.rand()\n"),
        Example(
            "from datetime import datetime\n\n@torch.compile\ndef f(x):\n    stamp = datetime.now()\n    return x\n"
        ),
        Example("import json\n\n@torch.compile\ndef f(x):\n    s = json.dumps({'a': 1})\n    return x\n"),
        Example("import sys\n\n@torch.compile\ndef f(x):\n    frame = sys._getframe()\n    return x\n"),
        Example(
            "import pdb\n\nclass M(nn.Module):\n    def forward(self, x):\n        pdb.set_trace()\n        return x\n"
        ),
        Example("@torch.compile\ndef f(x):\n    torch.manual_seed(0)\n    return x + torch.rand(3)\n"),
    )
    valid = (
        Example("import random\n\n@torch.compile\ndef f(x):\n    return x * random.randint(1, 3)\n"),
        Example("import numpy as np\n\n@torch.compile\ndef f(x):\n    return x + torch.from_numpy(np.random.rand(3))\n"),
        Example("import inspect, os, re\n\n@torch.compile\ndef f(x):\n    n = len(inspect.signature(f).parameters)\n"
                "    home = os.environ.get('HOME', '')\n    m = re.match(r'a+', 'aaa')\n    return x * n\n"),
        Example("import time\n\ndef train(model, x):\n    start = time.time()\n    return model(x), time.time() - start\n"),
        Example("@torch.compile\ndef f(x):\n    return x + torch.rand(3)\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        head = node.func
        while isinstance(head, cst.Attribute):
            head = head.value
        if not isinstance(head, cst.Name) or head.value not in ctx.imports.aliases:
            return  # only names that come from an import: a local `random` is not the module
        full = ctx.resolve(node.func)
        found = behaviour(full, node) if full else None
        if found is None:
            return
        written = dotted_code(node.func)
        shown = f"`{written}()`" if written == full else f"`{written}()` ({full})"
        ctx.report(
            self,
            node,
            f"{shown} {found.reason}: the graph breaks here ({found.gb_code})",
            gb_codes=(found.gb_code,),
            fix=found.fix,
        )


RULE = SkippedCall()
