"""The CLI's output piped into a reader that stops early (`memex search ... | head`)."""

from __future__ import annotations

import subprocess
import sys

# A command that prints far more than a pipe holds, run through the real `main`.
LOUD = """
import argparse
from memex.cli import main

def loud(args, settings):
    for _ in range(100_000):
        print("memex " * 20)
    return 0

parser = argparse.ArgumentParser()
parser.set_defaults(run=loud)
main._parser = lambda: parser
main.main([])
"""


def test_a_reader_that_stops_early_ends_the_command_without_a_traceback() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", LOUD], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(100)
    process.stdout.close()  # what `head` does once it has its lines
    errors = process.stderr.read().decode()
    assert process.wait(timeout=60) == 1
    assert errors == ""
