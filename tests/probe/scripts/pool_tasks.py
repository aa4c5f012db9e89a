"""A multiprocessing.Pool: its tasks go to whichever worker is free, differently in each run."""
import multiprocessing
import sys

import torch


def work(i):
    if "--seed" in sys.argv:
        torch.manual_seed(i)
    return torch.rand(3).sum().item() + i  # TASK LINE


if __name__ == "__main__":
    with multiprocessing.Pool(2) as pool:
        print(pool.map(work, range(6)))
