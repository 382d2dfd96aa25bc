"""`python -m kvviz lesson|class|export|vllm`: the `kvviz` command (kvviz/cli.py)."""

import sys

from kvviz.cli import main

sys.exit(main())
