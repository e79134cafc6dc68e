import sys

from polars_ppdm.pipeline.commands import main

sys.exit(main())
