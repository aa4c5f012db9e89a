"""The whole-program view: entry points, the call graph, programs and what they do
(seeds, draws, training), kept up to date in place after an edit (`live`)."""
