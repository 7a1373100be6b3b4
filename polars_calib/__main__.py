"""``python -m polars_calib``: the ``polars-calib`` command line."""

import sys

from polars_calib.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
