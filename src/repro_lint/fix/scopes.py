"""What a scope binds, as the fix layouts (`layout.Layout` on libcst, `ast_layout.AstLayout` on
`ast`) record it, and the set-up calls both let into an import block: kept apart from both
so that either can be used without the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

Pos = tuple[int, int]


@dataclass
class Binding:
    name: str
    kind: str  # "import" (import X [as A]), "import-sub" (import X.y binds X), "from" (from P import N [as A]),
    # "typing" (an import under `if TYPE_CHECKING:`), "other"
    module: Optional[str]  # what an import binds: X, or P.N for a from-import
    line: int
    top: int  # module-level statement index (module bindings)
    in_main: bool = False


@dataclass
class FunctionFacts:
    node: Any  # the function's node (libcst's or ast's)
    qual: str
    parents: tuple  # enclosing function quals, innermost first
    bindings: dict = field(default_factory=dict)  # name -> [Binding]
    globals: set = field(default_factory=set)


# calls of set-up statements that scripts put between their imports (`layout.import_block`)
SETUP_CALLS = (
    "warnings.", "sys.path.", "os.environ.", "logging.", "matplotlib.use", "mpl.use", "faulthandler.", "load_dotenv",
    # display settings (plot styles, print options)
    "sns.set", "seaborn.set", "plt.style.use", "plt.rc", "matplotlib.rc", "np.set_printoptions", "numpy.set_printoptions",
    "torch.set_printoptions", "pd.set_option", "pandas.set_option",
)
