"""The trace a run writes, shared by the runner (which has torch) and the parent (which
need not).

Each op is a row `[name_id, location_id, input_hash, output_hash, flags]`: `name_id`
indexes the run's `names` (aten schema names), `location_id` its `locations`
(`[path, line, function, byte_column]`, -1 when no user code was on the stack), the
hashes are 64-bit fingerprints (0 when fingerprints were off), and `flags` holds the
bits below.
"""

GLOBAL_DRAW = 1  # drew from a global generator (seeded-nondeterministic op, no generator=)
BACKWARD = 2  # ran inside the autograd engine
SINK = 4  # handed values to Python (`.item()`, `bool(t)`): its results leave torch
STATE = 8  # wrote a parameter or a module buffer
COLLECTIVE = 16  # a torch.distributed collective: inputs are not compared, results are
RANDOM = 32  # drew random numbers (tagged nondeterministic_seeded), from any generator
