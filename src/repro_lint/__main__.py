import sys

from repro_lint.cli.main import main

sys.exit(main())
