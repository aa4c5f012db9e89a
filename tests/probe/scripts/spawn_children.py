"""Work done only in processes started by torch.multiprocessing.spawn."""
import sys

import torch
import torch.multiprocessing as mp


def work(index, out_dir):
    x = torch.rand(4)  # CHILD DRAW
    torch.save(x, f"{out_dir}/part{index}.pt")


if __name__ == "__main__":
    mp.spawn(work, args=(sys.argv[1],), nprocs=2)
