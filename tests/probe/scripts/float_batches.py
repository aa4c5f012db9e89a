"""A DataLoader with two workers over float tensors: the default collate resizes shared
memory with `resize_`, which is not the quantized case the catalog is about."""
import torch
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    torch.manual_seed(0)
    data = TensorDataset(torch.arange(24.0).reshape(12, 2))
    model = torch.nn.Linear(2, 1)
    for (batch,) in DataLoader(data, batch_size=4, num_workers=2):
        model(batch).sum().backward()
