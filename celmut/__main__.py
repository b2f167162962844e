import sys

from celmut.main import main

sys.exit(main())
