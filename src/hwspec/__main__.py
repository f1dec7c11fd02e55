from hwspec.cli.commands import main

raise SystemExit(main())
