"""The project on disk: its root, its files and module names, notebooks, its configuration
and the releases of the libraries it declares."""
