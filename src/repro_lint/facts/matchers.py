"""The API catalogs compiled into lookup tables for the extraction pass."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from repro_lint.core import catalog
from repro_lint.core.stdlib import stdlib_module_names


@dataclass(frozen=True)
class SeederSpec:
    name: str
    sources: tuple[str, ...]
    requires_arg: bool
    framework: bool
    # a framework object whose construction seeds (transformers' Trainer): it seeds from the
    # framework's own default unless told otherwise, which is not determinism intent
    build: bool = False
    # for a build: it seeds only with a seed given by this keyword (Lightning's LightningCLI)
    seed_keyword: str = ""
    # a helper whose seed is passed by this keyword only, after arguments of other kinds
    # (ColossalAI's `launch_from_torch(config, seed=...)`): its seed expression is that keyword's
    seed_from_keyword: str = ""


@dataclass(frozen=True)
class Runner:
    """Framework calls that run project hooks (frameworks.toml, `runners`)."""

    framework: str
    packages: frozenset
    methods: dict  # runner method -> the hooks only it runs
    receiver_hint: str
    bases: frozenset
    hooks: frozenset
    hook_prefixes: tuple

    def is_hook(self, name: str, methods: set) -> bool:
        """Whether a call of one of `methods` runs the hook `name`."""
        return name in self.hooks or name.startswith(self.hook_prefixes) or any(name in self.methods.get(m, ()) for m in methods)


@dataclass(frozen=True)
class GeneratorSpec:
    name: str
    seed_arg: int
    seed_kw: str
    bit_generator_arg: int  # -1 when the constructor takes a seed directly
    nested_only: bool


class Matchers:
    """Everything the one-pass extractor needs to know about APIs, as dict/set lookups."""

    def __init__(self, extra_seeders: dict | None = None, extra_consumers: dict | None = None) -> None:
        rng = catalog.load("rng")
        prog = catalog.load("program")
        flags = catalog.load("flags")
        frameworks = catalog.load("frameworks")
        self.sources: tuple[str, ...] = tuple(rng["sources"])
        self.network_destinations: frozenset[str] = frozenset(rng.get("network-destinations", ()))
        self.network_destinations |= frozenset(rng.get("naming-destinations", ()))
        self._network_suffixes = tuple("_" + n for n in sorted(self.network_destinations))
        self.naming_sinks = frozenset(rng.get("naming-sinks", ()))
        self.parameter_constructors: frozenset[str] = frozenset(rng.get("parameter-constructors", ()))
        self.draw_functions: dict[str, str] = {}
        self.draw_prefixes: list[tuple[str, str]] = []
        self.not_drawing: frozenset = frozenset(n for spec in rng["consumers"].values() for n in spec.get("not-drawing", ()))
        self.trained_head_words: tuple = tuple(w for spec in rng["consumers"].values() for w in spec.get("trained-head-words", ()))
        self.draw_methods: dict[str, str] = {}
        self.draw_classes: dict[str, str] = {}
        self.shuffling_loaders: dict[str, str] = {}
        self.iterated_draws: set[str] = set()  # draws made when iterated, not when built
        self.parameter_inits: set[str] = set()  # draws that only initialise parameters
        self.parameter_init_prefixes: tuple[str, ...] = ()
        self.parameter_attributes: set[str] = set()  # attributes that hold a module's parameters
        self.train_mode_draws: set[str] = set()  # draws of modules in training mode only (dropout)
        for source, spec in rng["consumers"].items():
            for name in spec.get("functions", ()):
                self.draw_functions[name] = source
            for prefix in spec.get("function-prefixes", ()):
                self.draw_prefixes.append((prefix, source))
            for name in spec.get("methods", ()):
                self.draw_methods[name] = source
            for name in spec.get("classes", ()):
                self.draw_classes[name] = source
            for name in spec.get("shuffling-loaders", ()):
                self.shuffling_loaders[name] = source
            self.iterated_draws.update(spec.get("drawn-when-iterated", ()))
            self.parameter_inits.update(spec.get("parameter-initialisers", ()))
            self.parameter_init_prefixes += tuple(spec.get("parameter-initialiser-prefixes", ()))
            self.parameter_attributes.update(spec.get("parameter-attributes", ()))
            self.train_mode_draws.update(spec.get("train-mode-draws", ()))
        for name, source in (extra_consumers or {}).items():
            self.draw_functions[name] = source
        self.seeders: dict[str, SeederSpec] = {}
        for item in rng["seeders"]:
            self.seeders[item["name"]] = SeederSpec(
                item["name"], tuple(item["sources"]), bool(item.get("requires-arg", False)), bool(item.get("framework", False)),
                seed_from_keyword=item.get("seed-from-keyword", ""),
            )
        self.seeding_methods: dict[str, SeederSpec] = {
            item["method"]: SeederSpec(item["name"], tuple(item["sources"]), False, bool(item.get("framework", False)))
            for item in rng.get("seeding-methods", ())
        }
        # methods of objects not typed here that draw (`x.normal_()`) or seed: (source, seeder)
        self.method_facts: dict[str, tuple] = {
            name: (self.draw_methods.get(name), self.seeding_methods.get(name)) for name in {*self.draw_methods, *self.seeding_methods}
        }
        for item in frameworks["seeding-builds"]:
            for name in item["calls"]:
                self.seeders[name] = SeederSpec(name, tuple(item["sources"]), False, True, build=True, seed_keyword=item.get("seed-keyword", ""))
        for name, sources in (extra_seeders or {}).items():
            self.seeders[name] = SeederSpec(name, tuple(sources), False, True)
        self.generators: dict[str, GeneratorSpec] = {
            g["name"]: GeneratorSpec(
                g["name"], int(g.get("seed-arg", 0)), g.get("seed-kw", "seed"), int(g.get("bit-generator-arg", -1)), bool(g.get("nested-only", False))
            )
            for g in rng["generators"]
        }
        # generator constructor -> the method that reseeds its object (`random.Random().seed`)
        self.reseed_methods: dict[str, str] = {g["name"]: g["reseed-method"] for g in rng["generators"] if "reseed-method" in g}
        self.reseed_method_names = frozenset(self.reseed_methods.values())
        self.known_packages = frozenset(rng["known-packages"])
        local = rng.get("local-state", {})
        self.local_contexts = frozenset([*local.get("contexts", ()), *local.get("meta-contexts", ())])
        self.local_words = tuple(local.get("words", ()))
        self.state_saves = {q: src for src, quals in local.get("save", {}).items() for q in quals}
        self.state_restores = {q: src for src, quals in local.get("restore", {}).items() for q in quals}
        # the last parts of those names: a call `x.attr(...)` with another `attr` is neither
        self.state_call_attrs = frozenset(q.rpartition(".")[2] for q in [*self.state_saves, *self.state_restores])
        self.seed_name = re.compile(rng["seed-name-pattern"], re.IGNORECASE)
        self._seeder_names: dict[str, bool] = {}
        self.config_calls = frozenset(prog["config-calls"])
        self.config_builders = tuple(prog.get("config-builders", ()))
        self.hydra_main = frozenset(prog["hydra-main"])
        self.optimizer_prefixes = tuple(prog["optimizer-prefixes"])
        self.optimizer_exclude = tuple(prog["optimizer-exclude"])
        self.trainers = frozenset(prog["trainers"])
        self.train_methods = frozenset(prog["train-methods"])
        self.tensor_factories = frozenset(prog["warm-up-tensors"])
        self.hydra_factories = frozenset(frameworks["by-name"]["hydra"])
        self.optimizer_hints = tuple(prog["optimizer-name-hints"])
        self.uses_torch_prefixes = tuple(prog["uses-torch-prefixes"])
        self.device_prefixes = tuple(prog.get("device-call-prefixes", ()))
        self.device_keywords = frozenset(prog.get("device-keywords", ()))
        self.other_frameworks = frozenset(prog.get("other-frameworks", ()))
        self.module_bases = frozenset(prog["module-bases"])
        self.instance_methods = tuple(prog["instance-methods"])
        self.building_methods = frozenset(prog.get("building-methods", ()))
        self.building_order = tuple(m for m in self.instance_methods if m in self.building_methods)
        self.calling_methods = frozenset(prog.get("calling-methods", ()))
        # what runs of an instance handed over (to a DataLoader, a Trainer, a wrapper): the
        # protocol but the building methods, in catalog order
        self.handed_methods = tuple(m for m in self.instance_methods if m not in self.building_methods)
        self.calling_order = tuple(m for m in self.instance_methods if m in self.calling_methods)
        self.library_methods = frozenset(prog.get("library-method-names", ()))
        self.inference_functions = re.compile(prog.get("inference-function-pattern", "(?!)"), re.IGNORECASE)
        self.callback_keywords = frozenset(prog["callback-keywords"])
        self.non_calling = frozenset(prog.get("non-calling", ()))
        self.checkpoint_methods = frozenset(prog.get("checkpoint-methods", ()))
        self.parameter_iterators = frozenset(prog.get("parameter-iterators", ()))
        self.parameter_copy_methods = frozenset(prog.get("parameter-copy-methods", ()))
        self.loading_classmethods = frozenset(prog.get("loading-classmethods", ()))
        self.eval_methods = frozenset(prog.get("eval-methods", ()))
        self.exit_calls = frozenset(prog.get("exit-calls", ()))
        self.request_servers = frozenset(prog.get("request-servers", ()))
        self.worker_callback_keywords = frozenset(prog.get("worker-callback-keywords", ()))
        # methods rules ask about by name, on any object (a library's too)
        self.asked_methods = self.checkpoint_methods | self.eval_methods
        self.flags: dict[str, dict] = {f["name"]: f for f in flags["flags"]}
        self.switches: dict[str, dict] = {s["name"]: s for s in flags["switches"]}
        self.trainer_flag = frameworks["trainer"]
        # objects built from configuration, and the config keys that name their classes
        self.factories = frozenset(frameworks["factories"]["calls"])
        self.config_keys = tuple(frameworks["factories"]["keys"])
        self.runners = tuple(
            Runner(
                r["framework"], frozenset(r["packages"]), {k: frozenset(v) for k, v in r["methods"].items()},
                r["receiver-hint"], frozenset(r["bases"]), frozenset(r["hooks"]), tuple(r["hook-prefixes"]),
            )
            for r in frameworks["runners"]
        )
        # (framework, method) of the runner calls that train (`trainer.fit(...)`)
        self.runner_trains = frozenset((r["framework"], m) for r in frameworks["runners"] for m in r.get("training-methods", ()))
        # keyword that carries the user's seed, per call (`TrainingArguments(seed=...)`)
        self.seed_arguments: dict[str, str] = {
            name: item["keyword"] for item in frameworks["seed-arguments"] for name in item["calls"]
        }
        appliers = frameworks.get("config-appliers", {})
        self.config_appliers = frozenset(appliers.get("calls", ()))
        self.apply_pattern = re.compile(appliers.get("apply-pattern", "(?!)"))
        self.cublas = flags["cublas"]
        cudnn = flags.get("cudnn-ops", {})
        self.cudnn_calls = frozenset(cudnn.get("calls", ()))
        self.cudnn_prefixes = tuple(cudnn.get("prefixes", ()))
        self.star_modules: dict[str, str] = dict(rng.get("star-import-modules", {}))
        self.hashseed_var = flags["hashseed"]["variable"]
        # Top-level names that are never project modules: calls into them are not call-graph edges.
        self.external_roots = stdlib_module_names() | self.known_packages | {"builtins"}
        # Every exact name above, and the top-level packages of every prefix: a resolved call
        # outside both cannot match any table (most calls; the extractor skips them quickly).
        self.catalog_names = frozenset(
            [*self.seeders, *self.draw_functions, *self.draw_classes, *self.shuffling_loaders, *self.generators,
             *self.switches, *self.trainers, *self.trainer_flag["classes"], *self.seed_arguments,
             "os.environ.setdefault", "os.environ.update", "os.putenv", *self.cudnn_calls, *self.config_appliers]
        )
        prefixes = [p for p, _ in self.draw_prefixes] + [*self.optimizer_prefixes, *self.uses_torch_prefixes, *self.cudnn_prefixes]
        self.catalog_roots = frozenset(p.split(".", 1)[0] for p in prefixes)

    def draw_source(self, qual: str) -> str | None:
        hit = self.draw_functions.get(qual)
        if hit is not None:
            return hit
        for prefix, source in self.draw_prefixes:
            if qual.startswith(prefix):
                return None if qual in self.not_drawing else source
        return None

    def is_optimizer(self, qual: str) -> bool:
        return qual.startswith(self.optimizer_prefixes) and not qual.startswith(self.optimizer_exclude)

    def is_network_destination(self, name: str) -> bool:
        """Whether a value kept under `name` (a variable, `args.dist_url`, an environment key)
        picks a port or address for the run's processes, or only names or times something
        (catalog `network-destinations`, `naming-destinations`)."""
        last = name.rpartition(".")[2].lower()
        return last in self.network_destinations or last.endswith(self._network_suffixes)

    def looks_like_seeder(self, qual_or_name: str) -> bool:
        last = qual_or_name.rpartition(".")[2]
        hit = self._seeder_names.get(last)
        if hit is None:  # names repeat across a project: the pattern runs once per name
            hit = self._seeder_names[last] = bool(self.seed_name.search(last))
        return hit


@functools.lru_cache(maxsize=8)
def get_matchers(extra_seeders: tuple = (), extra_consumers: tuple = ()) -> Matchers:
    """Matchers for a configuration (config extras are passed as sorted tuples to be hashable)."""
    return Matchers(
        {k: list(v) for k, v in extra_seeders},
        dict(extra_consumers),
    )
