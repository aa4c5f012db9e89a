"""Build the benchmark corpus: the installed standard library plus generated training code.

    python bench/make_corpus.py DEST [--labs 40]

DEST becomes a project (it gets a `pyproject.toml`) holding
- `stdlib/`: every `.py` file of the running interpreter's standard library,
  without `site-packages/` and `__pycache__/` and without the three test-data files whose
  encoding is deliberately broken (1,787 files on Python 3.11.7);
- `labs/lab_NN/`: generated training packages (83 files each) that use torch, numpy,
  `random`, DataLoader and seeding in the ways real projects do, and import each other.

The generated tree depends only on `--labs` and `--seed`: the same arguments always give
byte-identical files, so anyone can rebuild the corpus the figures were measured on.
"""

from __future__ import annotations

import argparse
import io
import random
import shutil
import sys
import sysconfig
import tokenize
from pathlib import Path

DATASETS_PER_LAB = 20
MODELS_PER_LAB = 20
UTILS_PER_LAB = 10
SCRIPTS_PER_LAB = 28


def decodable(data: bytes) -> bool:
    """Whether the interpreter could read this as source (a few test files are deliberately not)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return False
    return True


def copy_stdlib(dest: Path) -> int:
    """Copy the standard library's Python files into `dest`; return how many."""
    src = Path(sysconfig.get_paths()["stdlib"])
    count = 0
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if rel.parts[0] == "site-packages" or "__pycache__" in rel.parts:
            continue
        if not decodable(path.read_bytes()):
            continue  # repro-lint reports such files as errors (exit 2), which is not what is timed
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        count += 1
    return count


# -- generated training code --------------------------------------------------------
SEEDING = '''"""Seeding helpers shared by the {lab} scripts."""

import os
import random

import numpy as np
import torch


def set_seed(seed: int = 0) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)


def seed_worker(worker_id: int) -> None:
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def make_generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g
'''


def dataset_module(rng: random.Random, lab: str, k: int) -> str:
    augment = rng.choice([
        "x = x + 0.01 * torch.randn_like(x)",
        "x = x * float(np.random.uniform(0.9, 1.1))",
        "x = x if random.random() < 0.5 else x.flip(-1)",
        "x = x + self.noise[idx]",
    ])
    size = rng.randint(64, 4096)
    return f'''"""Synthetic dataset {k} of {lab}."""

import random

import numpy as np
import torch
from torch.utils.data import Dataset


class Dataset{k}(Dataset):
    """{size} samples of {rng.randint(4, 64)} features."""

    def __init__(self, n: int = {size}, dim: int = {rng.randint(4, 64)}, train: bool = True) -> None:
        self.n = n
        self.dim = dim
        self.train = train
        self.noise = torch.zeros(n, dim)
        self.labels = np.arange(n) % {rng.randint(2, 10)}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, idx: int):
        x = torch.full((self.dim,), float(idx % 7))
        if self.train:
            {augment}
        return x, int(self.labels[idx])


def build(train: bool = True) -> Dataset{k}:
    return Dataset{k}(train=train)
'''


def model_module(rng: random.Random, lab: str, k: int) -> str:
    hidden = rng.choice([32, 64, 128, 256])
    extra = rng.choice([
        "nn.Dropout(p=0.1)",
        "nn.ReLU()",
        "nn.LayerNorm({h})".format(h=hidden),
        "nn.GELU()",
    ])
    init = rng.choice([
        "nn.init.xavier_uniform_(m.weight)",
        "nn.init.kaiming_normal_(m.weight)",
        "m.weight.data.normal_(0.0, 0.02)",
        "nn.init.zeros_(m.bias)",
    ])
    return f'''"""Model {k} of {lab}."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net{k}(nn.Module):
    def __init__(self, dim: int = 16, classes: int = 10) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, {hidden}), {extra}, nn.Linear({hidden}, {hidden}))
        self.head = nn.Linear({hidden}, classes)
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            {init}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.body(x))
        return self.head(h)


def build(dim: int = 16, classes: int = 10) -> Net{k}:
    return Net{k}(dim, classes)
'''


def utils_module(rng: random.Random, lab: str, k: int) -> str:
    return f'''"""Metrics and logging helpers ({lab}, part {k})."""

import json
import logging
import math
from pathlib import Path

import numpy as np
import torch

log = logging.getLogger(__name__)


def accuracy(logits: torch.Tensor, target: torch.Tensor) -> float:
    return float((logits.argmax(-1) == target).float().mean())


def running_mean(values, window: int = {rng.randint(3, 50)}):
    out = []
    for i in range(len(values)):
        lo = max(0, i - window + 1)
        out.append(float(np.mean(values[lo : i + 1])))
    return out


def save_metrics(path: Path, metrics: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(metrics, indent=2, sort_keys=True))
    log.info("saved %d metrics to %s", len(metrics), path)


def cosine_lr(step: int, total: int, base: float = {rng.choice(["1e-3", "3e-4", "0.1"])}) -> float:
    return 0.5 * base * (1 + math.cos(math.pi * step / max(1, total)))
'''


def script_module(rng: random.Random, labs: list[str], lab: str, k: int) -> str:
    """A training entry point; about half seed properly, the rest show typical mistakes."""
    other = rng.choice(labs)
    ds = rng.randrange(DATASETS_PER_LAB)
    md = rng.randrange(MODELS_PER_LAB)
    ut = rng.randrange(UTILS_PER_LAB)
    seeded = rng.random() < 0.5
    workers = rng.choice([0, 2, 4])
    loader_extra = rng.choice([
        "",
        ", worker_init_fn=seed_worker",
        ", worker_init_fn=seed_worker, generator=make_generator(args.seed)",
    ])
    seed_line = "set_seed(args.seed)" if seeded else "print('seed', args.seed)"
    flags = rng.choice([
        "torch.backends.cudnn.benchmark = True",
        "torch.backends.cudnn.deterministic = True",
        "torch.use_deterministic_algorithms(True)",
        "pass",
    ])
    return f'''"""Train model {md} on dataset {ds} ({lab}, experiment {k})."""

import argparse
import io
import random

import numpy as np
import torch
from torch.utils.data import DataLoader

from labs.{lab}.seeding import seed_worker, make_generator, set_seed
from labs.{other}.data.dataset_{ds:02d} import build as build_dataset
from labs.{lab}.models.net_{md:02d} import build as build_model
from labs.{lab}.utils.metrics_{ut:02d} import accuracy, cosine_lr, save_metrics


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default={rng.randint(1, 20)})
    p.add_argument("--lr", type=float, default={rng.choice(["1e-3", "3e-4", "0.01"])})
    p.add_argument("--seed", type=int, default={rng.randint(0, 9999)})
    p.add_argument("--out", default="runs/{lab}_{k:02d}")
    return p.parse_args(argv)


def train_epoch(model, loader, opt, epoch: int, total: int) -> float:
    model.train()
    accs = []
    for step, (x, y) in enumerate(loader):
        for group in opt.param_groups:
            group["lr"] = cosine_lr(epoch * len(loader) + step, total)
        opt.zero_grad()
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        accs.append(accuracy(logits.detach(), y))
    return float(np.mean(accs)) if accs else 0.0


def main(argv=None) -> None:
    args = parse_args(argv)
    {seed_line}
    {flags}
    dataset = build_dataset(train=True)
    loader = DataLoader(dataset, batch_size={rng.choice([16, 32, 64])}, shuffle=True, num_workers={workers}{loader_extra})
    model = build_model()
    opt = torch.optim.{rng.choice(["SGD", "Adam", "AdamW"])}(model.parameters(), lr=args.lr)
    history = []
    for epoch in range(args.epochs):
        if random.random() < 0.0:
            continue
        history.append(train_epoch(model, loader, opt, epoch, args.epochs * len(loader)))
    save_metrics(__import__("pathlib").Path(args.out) / "metrics.json", {{"acc": history}})


if __name__ == "__main__":
    main()
'''


def write_labs(dest: Path, n_labs: int, seed: int) -> int:
    rng = random.Random(seed)
    labs = [f"lab_{i:02d}" for i in range(n_labs)]
    files: dict[Path, str] = {dest / "__init__.py": '"""Generated training packages."""\n'}
    for lab in labs:
        base = dest / lab
        files[base / "__init__.py"] = f'"""{lab}: generated experiments."""\n\nfrom .seeding import set_seed\n'
        files[base / "seeding.py"] = SEEDING.format(lab=lab)
        for sub, count, make in (
            ("data", DATASETS_PER_LAB, dataset_module),
            ("models", MODELS_PER_LAB, model_module),
            ("utils", UTILS_PER_LAB, utils_module),
        ):
            files[base / sub / "__init__.py"] = ""
            stem = {"data": "dataset", "models": "net", "utils": "metrics"}[sub]
            for k in range(count):
                files[base / sub / f"{stem}_{k:02d}.py"] = make(rng, lab, k)
        for k in range(SCRIPTS_PER_LAB):
            files[base / f"train_{k:02d}.py"] = script_module(rng, labs, lab, k)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return len(files)


def build(dest: Path, n_labs: int = 40, seed: int = 0) -> dict[str, int]:
    """Create the corpus in `dest` (which must not exist yet)."""
    dest.mkdir(parents=True)
    (dest / "pyproject.toml").write_text('[project]\nname = "repro-lint-bench-corpus"\nversion = "0"\n')
    n_std = copy_stdlib(dest / "stdlib")
    n_gen = write_labs(dest / "labs", n_labs, seed)
    return {"stdlib": n_std, "generated": n_gen}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dest", type=Path, help="folder to create (must not exist)")
    p.add_argument("--labs", type=int, default=40, help="generated packages, 83 files each (default 40)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generator (default 0)")
    args = p.parse_args(argv)
    if args.dest.exists():
        print(f"{args.dest}: already exists", file=sys.stderr)
        return 2
    counts = build(args.dest, args.labs, args.seed)
    print(f"{args.dest}: {counts['stdlib']} standard library files, {counts['generated']} generated files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
