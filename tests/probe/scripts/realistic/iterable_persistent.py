"""An IterableDataset that augments with torch's generator in two persistent workers, for
two epochs; torch is seeded."""
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Stream(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        for i in range(info.id, 8, info.num_workers):
            yield torch.full((3,), float(i)) + torch.rand(3)  # augmentation in the worker


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    loader = DataLoader(Stream(), batch_size=2, num_workers=2, persistent_workers=True)
    for epoch in range(2):
        for batch in loader:
            model(batch).sum().backward()
