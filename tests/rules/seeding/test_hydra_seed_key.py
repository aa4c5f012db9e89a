"""Which `cfg.<seed>` a fix may read in a Hydra app: only a key the composed config has."""

from __future__ import annotations

from repro_lint.index.hydra_configs import hydra_seed_key


def write(root, files: dict) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_only_the_composition_of_the_named_config_counts(tmp_path):
    write(tmp_path, {
        "conf/train.yaml": "defaults:\n- _self_\n- experiment: base\n- model: small\nlr: 1\n",
        "conf/experiment/base.yaml": "# @package _global_\nrandom_seed: 3\n",
        "conf/model/small.yaml": "seed: 9\n",  # lands under cfg.model, not at the top
        "conf/eval.yaml": "checkpoint: x\n",
        "conf/other.yaml": "seed: 5\n",
    })
    conf = tmp_path / "conf"
    assert hydra_seed_key(conf, tmp_path, "train") == "random_seed"
    assert hydra_seed_key(conf, tmp_path, "eval.yaml") is None
    assert hydra_seed_key(conf, tmp_path, None) is None


def test_a_null_seed_is_not_a_seed(tmp_path):
    write(tmp_path, {"conf/a.yaml": "seed: null  # set on the command line\n", "conf/b.yaml": "defaults:\n  - base\n", "conf/base.yaml": "seed: 4\n"})
    assert hydra_seed_key(tmp_path / "conf", tmp_path, "a") is None
    assert hydra_seed_key(tmp_path / "conf", tmp_path, "b") == "seed"


def test_configs_outside_the_project_are_not_read(tmp_path):
    write(tmp_path, {"outside/c.yaml": "seed: 1\n", "proj/x.py": ""})
    assert hydra_seed_key(tmp_path / "outside", tmp_path / "proj", "c") is None
