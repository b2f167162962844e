import sys

from celmut.cli.main import main

sys.exit(main())
