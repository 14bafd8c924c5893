import sys

from compile_lint.cli import main

sys.exit(main())
