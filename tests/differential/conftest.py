"""Chooses the run's fresh differential seed once and prints it in pytest's header, so every run (passing
or not) shows how to reproduce it."""
import os
import random

if "TUG_DIFF_SEED" not in os.environ:
    os.environ["TUG_DIFF_SEED"] = str(random.SystemRandom().randrange(1000, 2**31))


def pytest_report_header(config):
    return f"differential fresh seed: TUG_DIFF_SEED={os.environ['TUG_DIFF_SEED']}"
