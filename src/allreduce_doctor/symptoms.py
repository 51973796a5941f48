"""What a reporter saw, as `diagnose --symptom` takes it and the terminal UI asks it: it ranks
the candidate causes of pasted text (evidence/differential.py)."""

SYMPTOMS = ("hang", "slow", "crash", "error")
