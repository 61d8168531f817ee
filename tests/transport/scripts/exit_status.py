"""Writes a few stderr lines, then exits with status 3 without reading anything."""

import sys

for n in range(25):
    sys.stderr.write(f"log line {n}\n")
sys.stderr.write("fatal: cannot open the database\n")
sys.stderr.flush()
sys.exit(3)
