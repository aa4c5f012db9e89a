"""One training step of a net with AdaptiveAvgPool2d((2, 2)): its backward operator has a
tensor where the forward has the output size."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(2, 1, 6, 6)).pow(2).mean()  # POOL LINE
loss.backward()
opt.step()
print(loss.item())
