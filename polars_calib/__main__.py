"""``python -m polars_calib``: the ``polars-calib`` command line."""

import sys

from polars_calib.cli import main

if __name__ == "__main__":
    sys.exit(main())
