"""``python -m schedlab``: the same command as ``schedlab`` (used to start service processes)."""

import sys

from schedlab.cli import main

sys.exit(main())
