"""Child entry point: ``python -m crashcart.probes NAME --context JSON`` (see child.py)."""

import sys

from crashcart.probes.child import main

sys.exit(main())
