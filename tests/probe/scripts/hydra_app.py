"""A Hydra app whose jobs build a model; seeded only when +seed=N is given."""
import hydra
import torch


@hydra.main(version_base=None, config_path=None)
def main(cfg):
    if cfg.get("seed") is not None:
        torch.manual_seed(cfg.seed)
    model = torch.nn.Linear(4, 1)  # MODEL LINE
    loss = model(torch.ones(8, 4)).pow(2).mean() * cfg.scale
    loss.backward()
    return loss.item()


if __name__ == "__main__":
    main()
