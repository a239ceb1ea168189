import sys

from swapkl.cli import main

sys.exit(main())
