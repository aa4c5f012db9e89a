"""Starts a Python child in isolated mode (-I), where the probe cannot follow it."""
import subprocess
import sys

import torch

torch.manual_seed(0)
torch.rand(3)
subprocess.run([sys.executable, "-I", "-c", "import torch; torch.rand(2)"], check=True)
