from allreduce_doctor.cli import main

raise SystemExit(main())
