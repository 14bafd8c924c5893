"""Does a branch on shape arithmetic break once automatic dynamic shapes make the length symbolic?

`must_pad = x.shape[-1] % n != 0; if must_pad:` compiled, then called with several lengths (the second
new length makes the size dynamic). Prints, per function and sequence of lengths, the graph breaks, the
unsupported events, the distinct graphs and whether the outputs agree with eager. See bench/out-of-reach.md.

    .venv/bin/python bench/symbolic_size_branch.py
    .venv-torch2.14/bin/python bench/symbolic_size_branch.py
"""

import torch
import torch._dynamo
import torch.nn.functional as F
from torch._dynamo.utils import counters


def pad_to_multiple(x: torch.Tensor, n: int = 4) -> torch.Tensor:
    must_pad = x.shape[-1] % n != 0
    if must_pad:
        x = F.pad(x, (0, n - x.shape[-1] % n))
    return x.reshape(x.shape[0], -1, n).sum(-1)


def pad_by_amount(x: torch.Tensor, n: int = 4) -> torch.Tensor:
    pad = (n - x.shape[-1] % n) % n
    if pad > 0:
        x = F.pad(x, (0, pad))
    return x.reshape(x.shape[0], -1, n).sum(-1)


def main() -> None:
    for fn in (pad_to_multiple, pad_by_amount):
        for lengths in ((6, 7, 8), (8, 6, 7), (8, 12, 7, 16), (6, 7, 8, 9, 10, 11, 12)):
            torch._dynamo.reset()
            counters.clear()
            compiled = torch.compile(fn, backend="eager")
            ok = True
            for length in lengths:
                x = torch.randn(2, length)
                ok &= torch.allclose(compiled(x), fn(x))
            breaks = sum(counters["graph_break"].values())
            unsupported = sum(counters["unimplemented"].values())
            graphs = counters["stats"]["unique_graphs"]
            print(
                f"torch {torch.__version__} {fn.__name__} lengths={lengths}: graph_breaks={breaks} "
                f"unsupported={unsupported} unique_graphs={graphs} correct={ok}"
            )


if __name__ == "__main__":
    main()
