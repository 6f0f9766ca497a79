"""Client of `kbv serve` (docs/SERVICE.md): submit (problem, solution, options), get the record that
`kbv eval --json` writes, and turn it into a scalar reward. Standard library only."""

from .client import Client, KbvError, reward

__all__ = ["Client", "KbvError", "reward"]
__version__ = "0.1.0"
