import sys

from polars_ppdm.jobs.commands import main

sys.exit(main())
