"""``python -m bamql.cli``: the ``bamql`` command."""

import sys

from bamql.cli.main import main

sys.exit(main())
