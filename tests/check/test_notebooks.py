"""Jupyter notebooks through the CLI: checked as one module (an entry point), located per
cell, fixed in place with everything but the edited cells' sources kept byte for byte."""

import difflib
import json

import pytest

from repro_lint.discover import notebook


def nb_json(*cells, indent=1, metadata=None):
    """A notebook as nbformat 4 writes it (sorted keys, `indent=1`, a final newline)."""
    out = []
    for i, cell in enumerate(cells):
        if isinstance(cell, tuple):  # ("markdown", text)
            out.append({"cell_type": cell[0], "id": f"m{i}", "metadata": {}, "source": cell[1].splitlines(keepends=True)})
            continue
        out.append({
            "cell_type": "code", "execution_count": i + 1, "id": f"cell-{i}", "metadata": {"tags": ["t"]},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": [f"output {i}\n", "1e-05 \u00e9\n"]}],
            "source": cell.splitlines(keepends=True),
        })
    meta = metadata if metadata is not None else {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    doc = {"cells": out, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=indent, sort_keys=True, ensure_ascii=False) + "\n"


UTILS = "import numpy as np\nimport torch\n\n\ndef set_seed(seed):\n    torch.manual_seed(seed)\n"
NOTEBOOK = nb_json(
    ("markdown", "# Training\n"),
    "%pip install torch\nimport numpy as np\nimport torch\nfrom utils import set_seed\n%matplotlib inline",
    "set_seed(0)\n!nvidia-smi\nx = np.random.rand(3)\nprint(x)",
    "%%bash\necho this is not python: (\n  ls",
    "%%time\nfor i in range(2):\n    !echo $i\n    y = torch.rand(1)",
)


@pytest.fixture
def nb_project(project):
    project("utils.py", UTILS)
    project("train.ipynb", NOTEBOOK)
    return project


def test_notebook_is_checked_as_an_entry_point_with_cell_locations(cli, nb_project):
    r = cli("check", ".", "--no-cache", cwd=nb_project.root, env={"NO_COLOR": "1"})
    assert r.returncode == 1, r.stdout + r.stderr
    # numpy is drawn in cell 3 (after the markdown cell and the imports) and never seeded; torch is
    # seeded by the project helper the notebook imports; the %%bash cell and the magics are skipped
    assert "train.ipynb:cell 3:3:5: RPL101 [*] numpy's global RNG" in r.stdout, r.stdout
    assert "   3 | x = np.random.rand(3)" in r.stdout
    assert "RPL001" not in r.stdout and "torch's global" not in r.stdout
    r = cli("check", "--no-cache", "--output-format", "json", cwd=nb_project.root)
    doc = json.loads(r.stdout)
    assert doc["files_checked"] == 2
    (f,) = doc["findings"]
    assert (f["path"], f["cell"], f["start"], f["end"]) == ("train.ipynb", 3, {"line": 3, "column": 5}, {"line": 3, "column": 22})
    r = cli("check", "--no-cache", "--output-format", "concise", "train.ipynb", cwd=nb_project.root)
    assert r.stdout.splitlines()[0].startswith("train.ipynb:cell 3:3:5: RPL101 [*] ")


def test_cell_magic_body_is_python_and_noqa_works_on_cell_lines(cli, project):
    path = project("exp.ipynb", nb_json("import torch", "%%time\nw = torch.rand(2)\n!ls"))
    r = cli("--no-cache", "--output-format", "concise", "-q", cwd=project.root)
    assert r.stdout.splitlines() == ["exp.ipynb:cell 2:2:5: RPL101 [*] torch's global RNG is drawn from but never seeded in this program"]
    path.write_text(nb_json("import torch", "%%time\nw = torch.rand(2)  # noqa: RPL101\n!ls"))
    r = cli("--no-cache", "--output-format", "concise", "-q", cwd=project.root)
    assert r.returncode == 0 and r.stdout == ""


def test_project_modules_never_import_notebooks(cli, project):
    # no module imports a notebook: `from exp import init_rng` is not the notebook's function
    project("exp.ipynb", nb_json("import numpy as np\n\ndef init_rng():\n    np.random.seed(0)"))
    project("train.py", "import numpy as np\nfrom exp import init_rng\n\ninit_rng()\nprint(np.random.rand(2))\n")
    r = cli("--no-cache", "--output-format", "concise", "-q", cwd=project.root)
    assert r.stdout.splitlines() == ["train.py:5:7: RPL101 [*] numpy's global RNG is drawn from but never seeded in this program"]


def test_fix_writes_valid_notebook_changing_only_the_edited_cell(cli, nb_project):
    path = nb_project.root / "train.ipynb"
    before = path.read_text(encoding="utf-8")
    r = cli("check", "--no-cache", "--fix", ".", cwd=nb_project.root)
    assert r.returncode == 0, r.stdout + r.stderr
    after = path.read_text(encoding="utf-8")
    old, new = json.loads(before), json.loads(after)
    assert [c.get("id") for c in old["cells"]] == [c.get("id") for c in new["cells"]]
    changed = [i for i, (a, b) in enumerate(zip(old["cells"], new["cells"])) if a != b]
    assert changed == [2]  # the seed went next to the program's own; every other cell is as it was
    assert {k: v for k, v in new["cells"][2].items() if k != "source"} == {k: v for k, v in old["cells"][2].items() if k != "source"}
    assert "".join(new["cells"][2]["source"]).startswith("set_seed(0)\nnp.random.seed(0)\n!nvidia-smi\n")  # magics kept as written
    # byte for byte: only lines of that cell's source array differ, in the file's own layout
    diff = [l for l in difflib.unified_diff(before.splitlines(), after.splitlines(), n=0, lineterm="") if l[:1] in "+-" and l[:3] not in ("+++", "---")]
    assert diff and all(l.startswith('+    "') for l in diff), diff
    assert after.endswith("}\n") and "\u00e9" in after  # the final newline and unescaped text stay
    r = cli("check", "--no-cache", ".", cwd=nb_project.root)
    assert r.returncode == 0 and "All checks passed." in r.stdout


def test_diff_of_a_notebook_is_per_cell(cli, nb_project):
    r = cli("check", "--no-cache", "--diff", ".", cwd=nb_project.root)
    assert r.returncode == 1
    assert "--- a/train.ipynb:cell 3\n+++ b/train.ipynb:cell 3\n" in r.stdout and "+np.random.seed(0)\n" in r.stdout


def test_fix_never_writes_into_a_magic_line(cli, project):
    # RPL201 moves the module-level seed into main; the `%env` line right above it would go with it
    src = nb_json(
        "import hydra\nimport torch\n%env CUBLAS_WORKSPACE_CONFIG=:4096:8\ntorch.manual_seed(0)",
        "@hydra.main(config_path=None, version_base=None)\ndef main(cfg):\n    print(torch.rand(2))\n\nmain()",
    )
    path = project("train.ipynb", src)
    r = cli("--no-cache", "--fix", cwd=project.root)
    assert r.returncode == 2
    assert "train.ipynb: RPL201: fix not applied: an edit would change a magic or shell line (cell 1, line 3)" in r.stderr
    assert path.read_text(encoding="utf-8") == src


def test_render_refuses_edited_dropped_or_moved_magic_lines():
    nb = notebook.read(nb_json("%load_ext autoreload\nimport numpy as np", "for i in range(2):\n    !echo $i\nprint(1)").encode())
    lines = nb.text.splitlines()
    assert lines[0].startswith("#") and lines[3].startswith("    pass  #")  # placeholders keep the lines
    assert json.loads(nb.render(nb.text.replace("print(1)", "print(2)")))["cells"][1]["source"][-1] == "print(2)"
    for edited in (
        nb.text.replace(lines[0] + "\n", ""),  # dropped
        nb.text.replace(lines[3], "    " + lines[3]),  # re-indented
        nb.text.replace(lines[0] + "\n", "") + lines[0] + "\n",  # moved to another cell
    ):
        with pytest.raises(notebook.NotebookError):
            nb.render(edited)


def test_add_noqa_in_a_notebook_then_nothing_left(cli, nb_project):
    r = cli("check", "--no-cache", "--add-noqa", ".", cwd=nb_project.root)
    assert r.returncode == 0 and "Added 1 noqa directive." in r.stderr
    cell = json.loads((nb_project.root / "train.ipynb").read_text())["cells"][2]
    assert cell["source"][2] == "x = np.random.rand(3)  # noqa: RPL101\n"
    assert cli("check", "--no-cache", ".", cwd=nb_project.root).returncode == 0


def test_invalid_notebooks_are_one_error_line_each(cli, project):
    project("broken.ipynb", '{"cells": [')
    project("other.ipynb", nb_json("import torch\nprint(torch.rand(1))", metadata={"kernelspec": {"language": "R"}}))
    project("train.py", "import numpy as np\nprint(np.random.rand(1))\n")
    r = cli("--no-cache", "--output-format", "concise", cwd=project.root)
    assert r.returncode == 2
    errors = r.stderr.splitlines()
    assert errors == ["repro-lint: error: broken.ipynb: not a notebook: invalid JSON: Expecting value: line 1 column 12 (char 11)"]
    # the Python file is still checked; an R notebook has no Python cells
    assert [l.split(":")[0] for l in r.stdout.splitlines()[:-1]] == ["train.py"]


def test_sarif_and_github_point_at_the_line_of_the_notebook_file(cli, nb_project):
    from sarif_schema import validate_sarif

    r = cli("check", "--no-cache", "--output-format", "sarif", cwd=nb_project.root)
    log = json.loads(r.stdout)
    validate_sarif(log)
    (res,) = log["runs"][0]["results"]
    region = res["locations"][0]["physicalLocation"]["region"]
    lines = NOTEBOOK.splitlines()
    assert lines[region["startLine"] - 1].strip() == '"x = np.random.rand(3)\\n",'
    assert res["message"]["text"].startswith("cell 3:3:5: ") and res["properties"]["notebookCell"] == {"cell": 3, "line": 3, "column": 5}
    r = cli("check", "--no-cache", "--output-format", "github", cwd=nb_project.root)
    assert r.stdout.startswith(f"::warning file=train.ipynb,line={region['startLine']},endLine={region['startLine']},title=RPL101")


def test_a_sampler_built_before_the_seed_cell_gets_no_fix_that_cannot_hold(cli, project):
    # the seed is bound in a later cell: neither it nor `torch.initial_seed()` follows the
    # program's seed where the sampler is built, so no fix is offered and the finding says why
    text = nb_json(
        "import torch\nfrom torch.utils.data import DataLoader, RandomSampler, TensorDataset\n"
        "data = TensorDataset(torch.arange(64.0))\nloader = DataLoader(data, sampler=RandomSampler(data), batch_size=8)",
        "seed = 7\ntorch.manual_seed(seed)\nmodel = torch.nn.Linear(1, 1)",
        "for (x,) in loader:\n    model(x.unsqueeze(1)).sum().backward()",
    )
    path = project("train.ipynb", text)
    r = cli("--no-cache", "--select", "RPL301", "--fix", cwd=project.root)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "error" not in r.stderr and "seeds torch only further down" in r.stdout, r.stdout + r.stderr
    assert path.read_text() == text


def test_fixes_of_later_rounds_find_their_place_after_blank_lines_a_cell_drops(cli, project):
    # the first round adds a seed (and blank lines) at the end of the imports' cell; a cell
    # does not keep trailing blank lines, so the next round's Trainer keyword must be placed
    # by the text the notebook holds, not the text before it was written
    text = nb_json(
        "import torch\nfrom lightning.pytorch import LightningModule, Trainer\n",
        "class Boring(LightningModule):\n    def __init__(self):\n        super().__init__()\n        self.layer = torch.nn.Linear(4, 1)\n",
        "def run():\n    trainer = Trainer(\n        max_epochs=1,\n    )\n    trainer.fit(Boring())\n",
        "run()\n",
    )
    path = project("train.ipynb", text)
    r = cli("--no-cache", "--fix", "--unsafe-fixes", cwd=project.root)
    assert r.returncode == 0 and "error" not in r.stderr, r.stdout + r.stderr
    fixed = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
    assert "torch.manual_seed(SEED)" in fixed and "deterministic=" in fixed, fixed


def test_seeding_goes_after_the_imports_that_follow_a_guarded_install_cell(cli, project):
    text = nb_json(
        "import sys\n\nINSTALL = False\nif INSTALL:\n    %pip install torch\n",
        "import torch\n\nmodel = torch.nn.Linear(8, 2)\nprint(model(torch.randn(4, 8)))\n",
    )
    path = project("demo.ipynb", text)
    r = cli("--no-cache", "--fix", cwd=project.root)
    assert r.returncode in (0, 1) and "error" not in r.stderr, r.stdout + r.stderr
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert cells[0] == "import sys\n\nINSTALL = False\nif INSTALL:\n    %pip install torch\n", cells[0]
    assert cells[1].startswith("import torch\n") and "torch.manual_seed(SEED)" in cells[1], cells[1]


def test_an_import_a_fix_adds_goes_into_the_first_cell_of_code_not_a_cell_of_shell_lines(cli, project):
    text = nb_json(
        "!pip install onnx\n#!pip install Pillow\n!pip install onnxruntime",
        "import sys\nimport torch\nprint(torch.__version__)",
        "!python export.py --weights yolov7-tiny.pt",
        "import random\nnames = ['person', 'horse']\nshades = {n: random.random() for n in names}\nprint(torch.rand(2), shades)",
    )
    path = project("demo.ipynb", text)
    before = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    r = cli("--no-cache", "--fix", cwd=project.root)
    assert r.returncode in (0, 1) and "error" not in r.stderr, r.stdout + r.stderr
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert cells[0] == before[0] and cells[2] == before[2], cells
    assert cells[1].startswith("import random\nimport sys\nimport torch\n"), cells[1]
    assert "random.seed(SEED)" in cells[1] and "torch.manual_seed(SEED)" in cells[1], cells[1]


def test_messages_name_notebook_lines_by_cell(cli, project):
    # a message that points at another line says which cell, as the locations do
    project("train.ipynb", nb_json(
        "import torch\nnoise = torch.randn(3)",
        "torch.manual_seed(0)\nprint(noise)",
    ))
    r = cli("--no-cache", "--format", "concise", "--select", "RPL103", cwd=project.root)
    assert "before it is seeded on line 1 of cell 2" in r.stdout, r.stdout
