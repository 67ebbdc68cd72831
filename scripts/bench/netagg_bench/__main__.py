# SPDX-License-Identifier: Apache-2.0
"""`python3 scripts/bench/netagg_bench COMMAND ...` (or `python3 -m netagg_bench` with scripts/bench
on the path): the commands of netagg_bench.cli."""
import os
import sys

if not __package__:
    # Run by its path: the package's parent folder goes first on the path, in place of the
    # package's own folder (whose modules are not meant to be imported on their own).
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from netagg_bench.cli import main  # noqa: E402

sys.exit(main())
