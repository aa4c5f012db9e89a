"""A LightningModule trained for a few steps on CPU; `--seed` calls seed_everything first."""
import sys

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.1), torch.nn.Linear(8, 1))

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


if __name__ == "__main__":
    if "--seed" in sys.argv:
        L.seed_everything(7, workers=True)
    data = TensorDataset(torch.linspace(-1, 1, 64).reshape(16, 4), torch.ones(16, 1))
    trainer = L.Trainer(max_steps=4, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Regressor(), DataLoader(data, batch_size=4, shuffle=True))
