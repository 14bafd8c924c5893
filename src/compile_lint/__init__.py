"""compile-lint: find torch.compile graph breaks and recompiles before you profile."""

__version__ = "0.1.0"
