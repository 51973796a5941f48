"""`allreduce-doctor validate`: prove the fabric under load (plan, launch, watch, judge, record)."""
