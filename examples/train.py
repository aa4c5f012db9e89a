"""A small training script with the usual reproducibility bugs (see README)."""
import random

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    loader = DataLoader(data, batch_size=8, shuffle=True, num_workers=2)
    model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.1), nn.Linear(16, 2))
    torch.backends.cudnn.benchmark = True
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        if random.random() < 0.5:
            x = x + torch.from_numpy(np.random.normal(size=x.shape)).float()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"final loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
