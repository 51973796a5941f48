"""One module per command, each with `add_parser(subparsers)` and `run(args)`: cli.py parses and
dispatches, these do the work (importing the library lazily, so a command's --help stays fast)."""
