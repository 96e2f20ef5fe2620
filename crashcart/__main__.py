"""``python -m crashcart``."""

from .cli import main

main()
