"""Checkpoints (RPL5xx): the detection cases of every `fixtures/RPL5*/` folder, their golden
fix pairs (`fix/`, run in process), and one pair through `python -m repro_lint`.
A new rule's folder is found by its code; `fixture_harness.py` says what each test checks."""

from fixture_harness import family_driver

test_detection, test_golden_fix, test_fix_in_a_subprocess = family_driver("RPL5")
