"""A model that uses index_add_ and bilinear interpolation while training."""
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3, padding=1)

    def forward(self, x, index):
        y = F.interpolate(self.conv(x), scale_factor=2, mode="bilinear")  # INTERPOLATE LINE
        flat = y.flatten(1)
        pooled = torch.zeros(4, flat.shape[1]).index_add_(0, index, flat)  # INDEX_ADD LINE
        return pooled.sum()


torch.manual_seed(0)
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
g = torch.Generator().manual_seed(1)
for step in range(2):
    x = torch.randn(6, 1, 4, 4, generator=g)
    index = torch.tensor([0, 1, 1, 2, 3, 3])
    opt.zero_grad()
    model(x, index).backward()
    opt.step()
