"""``python -m paperlab.cli`` (used by ``torchrun``)."""

from paperlab.cli import main

raise SystemExit(main())
