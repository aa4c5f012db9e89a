"""A model run through torch.compile, under bf16 autocast on CPU; torch is seeded."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 1))
compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 8)
for _ in range(2):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = compiled(x).float().pow(2).mean()
    loss.backward()
    opt.step()
print(loss.item())
