"""A Hydra app seeded at module level: under a joblib sweep the jobs run in other processes,
where that line never runs."""
import hydra
import torch

torch.manual_seed(0)  # MODULE SEED


@hydra.main(version_base=None, config_path=None)
def main(cfg):
    model = torch.nn.Linear(4, 1)  # MODEL LINE
    loss = model(torch.ones(8, 4)).pow(2).mean() * cfg.scale
    loss.backward()
    return loss.item()


if __name__ == "__main__":
    main()
