"""``python -m loopsim`` runs the command line."""

from loopsim.cli import main

raise SystemExit(main())
