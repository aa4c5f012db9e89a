"""torch is seeded; the dataset draws from numpy's global generator in two DataLoader
workers, which PyTorch seeds from the loader's base seed (since 1.9)."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Augmented(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.from_numpy(np.random.rand(3)).float() + i  # WORKER DRAW


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    for batch in DataLoader(Augmented(), batch_size=2, num_workers=2):
        model(batch).sum().backward()
    print(model.weight.grad)
