"""A test case over one tools/paired-measure run in a temporary folder: its measured.json and a tool run on it."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path


class MeasuredRunCase(unittest.TestCase):
    SCRIPT = None  # the tool under test: its first argument is the run's measured.json

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = Path(self.dir.name)
        self.measured = self.root / "measured.json"

    def tearDown(self):
        self.dir.cleanup()

    def write_measured(self, algorithms):
        self.measured.write_text(json.dumps({"algorithms": algorithms}))

    def run_tool(self, *args):
        return subprocess.run([sys.executable, str(self.SCRIPT), str(self.measured), *args], capture_output=True,
                              text=True)
