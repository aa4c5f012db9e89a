import sys

from repro_lint.cli import main

sys.exit(main())
