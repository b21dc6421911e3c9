"""`python -m spark_multijoin advise FILE.sql...`: see spark_multijoin._cli."""

import sys

from spark_multijoin._cli import main

sys.exit(main())
