import sys

from polars_ppdm.cli import main

sys.exit(main())
