"""`--confirm`: run compiled regions under real Dynamo. Only the worker side imports torch."""

GIVE_INPUTS = (
    "give it inputs: write a factory `def make(): return (fn, (torch.randn(4, 8),))` and pass "
    "`--target module:make` (or list it in [tool.compile-lint.confirm] targets)"
)
TIMEOUT_ATTRIBUTE = "compile_lint_timeout"  # `make.compile_lint_timeout = 900`: seconds for that factory
