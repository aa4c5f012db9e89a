"""Four steps with dropout; saves a checkpoint after step 2 (--out DIR), with the generator
state only when --with-rng is given; --resume PATH continues from such a checkpoint."""
import argparse
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--resume")
parser.add_argument("--with-rng", action="store_true")
args = parser.parse_args()

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.linspace(-1, 1, 32).reshape(8, 4)
start = 0
if args.resume:
    state = torch.load(args.resume)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    if "rng" in state:
        torch.set_rng_state(state["rng"])
    start = state["step"]
for step in range(start, 4):
    opt.zero_grad()
    loss = model(x).pow(2).mean()  # FORWARD LINE
    loss.backward()
    opt.step()
    if step + 1 == 2 and not args.resume:
        state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step + 1}
        if args.with_rng:
            state["rng"] = torch.get_rng_state()
        torch.save(state, os.path.join(args.out, "step2.pt"))  # SAVE LINE
print(loss.item())
