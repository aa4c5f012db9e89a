"""Fails the way training scripts do: a message through sys.exit, or argparse's usage error."""
import argparse
import sys

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--config")
args = parser.parse_args()
torch.zeros(1)
if args.config is None:
    sys.exit("no config given: pass --config conf/train.yaml")
