from hwspec.cli import main

raise SystemExit(main())
